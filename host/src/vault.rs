//! Encryption at rest of PSP secrets.
//!
//! Merchants' PSP secrets (client secrets, private keys, webhook tokens) are sealed with
//! AES-256-GCM before they reach SQLite or PostgreSQL, so nothing secret is plaintext in the
//! database. A sealed value is text, `v1:<key id>:<nonce>:<ciphertext+tag>` (base64url, no
//! padding), so it stores identically in both databases and names the key that sealed it.
//!
//! - [`MasterKey`]: 32 bytes and an id derived from them, so a key can never be mislabelled.
//! - [`Vault`]: seals under the current key, opens under the current or any previous key;
//!   [`Vault::reseal`] moves a value to the current key (`pixgw vault rotate`).
//! - [`Aad`]: binds a ciphertext to its table, record and field; moved anywhere else, it no
//!   longer opens.
//! - [`Vault::from_env_or_dev_file`]: `PIXGW_MASTER_KEY` in production, a generated
//!   `<data dir>/master.key` in development.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// The variable that carries the current master key in production.
pub const MASTER_KEY_ENV: &str = "PIXGW_MASTER_KEY";
/// The variable that carries previous master keys, comma-separated, while rotating.
pub const PREVIOUS_KEYS_ENV: &str = "PIXGW_MASTER_KEY_PREVIOUS";
/// The development key file inside the data directory.
pub const DEV_KEY_FILE: &str = "master.key";

const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const KEY_ID_HEX_LEN: usize = 16;
const KEY_ID_LABEL: &[u8] = b"pixgw-vault-key-id";
const FORMAT_VERSION: &str = "v1";
const GENERATE_HINT: &str = "openssl rand -base64 32";

/// The module's one error type.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("{name} is not valid base64 ({problem}). Generate one with: {GENERATE_HINT}")]
    KeyNotBase64 { name: String, problem: String },

    #[error(
        "{name} must be the base64 of exactly 32 bytes; it decodes to {len} bytes. \
         Generate one with: {GENERATE_HINT}"
    )]
    KeyWrongLength { name: String, len: usize },

    #[error(
        "{PREVIOUS_KEYS_ENV} is set but {MASTER_KEY_ENV} is not: set {MASTER_KEY_ENV} to the \
         current key too"
    )]
    PreviousWithoutCurrent,

    #[error(
        "the development master key {} is readable by group or others (mode {mode:03o}): \
         run chmod 600 {}",
        .path.display(),
        .path.display()
    )]
    DevKeyPermissions { path: PathBuf, mode: u32 },

    #[error(
        "the development master key {} is empty: delete it and a new one is generated",
        .path.display()
    )]
    DevKeyEmpty { path: PathBuf },

    #[error("the development master key {}: {source}", .path.display())]
    DevKeyIo { path: PathBuf, source: io::Error },

    /// Not a value this vault produced.
    #[error("not a sealed vault value ({reason}); expected v1:<key id>:<nonce>:<ciphertext>")]
    Malformed { reason: &'static str },

    #[error(
        "sealed under key {key_id}, which this gateway does not have: set {PREVIOUS_KEYS_ENV} \
         to the old key to rotate"
    )]
    UnknownKey { key_id: String },

    #[error(
        "authentication failed: the ciphertext, its record/field binding, or the key does not match"
    )]
    Tampered,

    #[error("the sealed value opened but is not UTF-8 text")]
    NotUtf8,
}

/// A 256-bit master key and the id derived from it.
///
/// The bytes live on the heap (moves do not copy them) and are zeroed on drop; `Debug` shows
/// only the id.
pub struct MasterKey {
    bytes: Box<[u8; KEY_LEN]>,
    id: String,
}

impl MasterKey {
    /// Parses the standard base64 of exactly 32 bytes, as `openssl rand -base64 32` prints;
    /// surrounding whitespace is ignored. Errors name `PIXGW_MASTER_KEY`.
    pub fn from_base64(text: &str) -> Result<MasterKey, VaultError> {
        MasterKey::parse(text, MASTER_KEY_ENV)
    }

    /// The key id: the first 16 hex characters of SHA-256("pixgw-vault-key-id" || key).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `name` says where the text came from, so the error points at the right setting.
    fn parse(text: &str, name: &str) -> Result<MasterKey, VaultError> {
        let decoded =
            Zeroizing::new(
                STANDARD
                    .decode(text.trim())
                    .map_err(|e| VaultError::KeyNotBase64 {
                        name: name.to_owned(),
                        problem: describe_base64_error(&e),
                    })?,
            );
        if decoded.len() != KEY_LEN {
            return Err(VaultError::KeyWrongLength {
                name: name.to_owned(),
                len: decoded.len(),
            });
        }
        let mut bytes = Box::new([0u8; KEY_LEN]);
        bytes.copy_from_slice(&decoded);
        Ok(MasterKey::from_boxed(bytes))
    }

    fn generate() -> MasterKey {
        let mut bytes = Box::new([0u8; KEY_LEN]);
        OsRng.fill_bytes(&mut bytes[..]);
        MasterKey::from_boxed(bytes)
    }

    fn from_boxed(bytes: Box<[u8; KEY_LEN]>) -> MasterKey {
        let digest = Sha256::new()
            .chain_update(KEY_ID_LABEL)
            .chain_update(&bytes[..])
            .finalize();
        let id = hex::encode(&digest[..KEY_ID_HEX_LEN / 2]);
        MasterKey { bytes, id }
    }

    fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(STANDARD.encode(&self.bytes[..]))
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new_from_slice(&self.bytes[..]).expect("a master key is 32 bytes")
    }
}

impl Drop for MasterKey {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl ZeroizeOnDrop for MasterKey {}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Describes a base64 error without echoing any character of the (secret) input.
fn describe_base64_error(error: &base64::DecodeError) -> String {
    use base64::DecodeError as E;
    match error {
        E::InvalidByte(offset, _) => format!("invalid character at offset {offset}"),
        E::InvalidLength(len) => format!("{len} characters is not a valid base64 length"),
        E::InvalidLastSymbol(offset, _) => format!("invalid last character at offset {offset}"),
        E::InvalidPadding => "invalid padding".to_owned(),
    }
}

/// Where the vault's current key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `PIXGW_MASTER_KEY`.
    Env,
    /// A development key generated into this file now.
    DevFileCreated(PathBuf),
    /// A development key read from this file.
    DevFileRead(PathBuf),
}

/// Associated data: binds a ciphertext to the table, record and field it is stored in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aad(Vec<u8>);

impl Aad {
    /// The bytes `pixgw:v1:{table}:{record_id}:{field}`.
    ///
    /// # Panics
    ///
    /// If `table` or `field` contains `:`. They are names from the code, and keeping the colon
    /// out of them keeps the encoding unambiguous whatever the record id holds.
    pub fn new(table: &str, record_id: &str, field: &str) -> Aad {
        assert!(
            !table.contains(':') && !field.contains(':'),
            "vault AAD table and field names must not contain ':' (got {table:?}, {field:?})"
        );
        Aad(format!("pixgw:{FORMAT_VERSION}:{table}:{record_id}:{field}").into_bytes())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Seals under the current key; opens under the current or any previous key.
pub struct Vault {
    current: MasterKey,
    previous: Vec<MasterKey>,
}

impl Vault {
    /// Previous keys are accepted to open only; duplicates of the current key or of each other
    /// are dropped.
    pub fn new(current: MasterKey, previous: Vec<MasterKey>) -> Vault {
        let mut kept: Vec<MasterKey> = Vec::with_capacity(previous.len());
        for key in previous {
            if key.id != current.id && kept.iter().all(|k| k.id != key.id) {
                kept.push(key);
            }
        }
        Vault {
            current,
            previous: kept,
        }
    }

    /// The vault for `pixgw serve`: `master_key` (`PIXGW_MASTER_KEY`) and `previous_keys`
    /// (`PIXGW_MASTER_KEY_PREVIOUS`, comma-separated) when given. Without a master key — for
    /// development only — the key in `<data_dir>/master.key`, generated (mode 0600) on first use.
    pub fn from_env_or_dev_file(
        master_key: Option<&str>,
        previous_keys: Option<&str>,
        data_dir: &Path,
    ) -> Result<(Vault, KeySource), VaultError> {
        let previous = parse_previous_keys(previous_keys.unwrap_or(""))?;
        if let Some(text) = master_key {
            let current = MasterKey::from_base64(text)?;
            return Ok((Vault::new(current, previous), KeySource::Env));
        }
        // Previous keys without a current one is a half-done production setup; a generated
        // development key would quietly start sealing new secrets under the wrong key.
        if !previous.is_empty() {
            return Err(VaultError::PreviousWithoutCurrent);
        }
        let path = data_dir.join(DEV_KEY_FILE);
        let (key, created) = load_or_create_dev_key(data_dir, &path)?;
        tracing::warn!(
            path = %path.display(),
            key_id = %key.id(),
            "PSP secrets are encrypted with a generated development key at {}; \
             production must set {MASTER_KEY_ENV}",
            path.display()
        );
        let source = if created {
            KeySource::DevFileCreated(path)
        } else {
            KeySource::DevFileRead(path)
        };
        Ok((Vault::new(key, Vec::new()), source))
    }

    /// The id of the key new values are sealed under.
    pub fn current_key_id(&self) -> &str {
        &self.current.id
    }

    /// Seals `plaintext` for the place `aad` names, under the current key and a fresh random
    /// nonce.
    pub fn seal(&self, plaintext: &[u8], aad: &Aad) -> String {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = self
            .current
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad: aad.as_bytes(),
                },
            )
            // Only fails for plaintexts beyond GCM's 64 GiB limit.
            .expect("AES-256-GCM seals any secret-sized plaintext");
        format!(
            "{FORMAT_VERSION}:{}:{}:{}",
            self.current.id,
            URL_SAFE_NO_PAD.encode(nonce),
            URL_SAFE_NO_PAD.encode(sealed)
        )
    }

    /// Opens a value sealed for the place `aad` names, under whichever known key sealed it.
    pub fn open(&self, sealed: &str, aad: &Aad) -> Result<Zeroizing<Vec<u8>>, VaultError> {
        let parts = Sealed::parse(sealed)?;
        let key = self
            .key(parts.key_id)
            .ok_or_else(|| VaultError::UnknownKey {
                key_id: parts.key_id.to_owned(),
            })?;
        key.cipher()
            .decrypt(
                &Nonce::from(parts.nonce),
                Payload {
                    msg: &parts.ciphertext,
                    aad: aad.as_bytes(),
                },
            )
            .map(Zeroizing::new)
            .map_err(|_| VaultError::Tampered)
    }

    /// [`Vault::open`] for secrets that are text.
    pub fn open_string(&self, sealed: &str, aad: &Aad) -> Result<Zeroizing<String>, VaultError> {
        let mut bytes = self.open(sealed, aad)?;
        match String::from_utf8(std::mem::take(&mut *bytes)) {
            Ok(text) => Ok(Zeroizing::new(text)),
            Err(e) => {
                e.into_bytes().zeroize();
                Err(VaultError::NotUtf8)
            }
        }
    }

    /// The id of the key `sealed` was sealed under.
    pub fn key_id_of<'a>(&self, sealed: &'a str) -> Result<&'a str, VaultError> {
        Sealed::parse(sealed).map(|parts| parts.key_id)
    }

    /// Whether `sealed` is not under the current key. A malformed value also counts, so that
    /// [`Vault::reseal`] reports it rather than a rotation skipping it in silence.
    pub fn needs_rotation(&self, sealed: &str) -> bool {
        self.key_id_of(sealed)
            .map_or(true, |id| id != self.current.id)
    }

    /// Opens `sealed` under whichever known key sealed it and seals it again under the current
    /// key, for the same place.
    pub fn reseal(&self, sealed: &str, aad: &Aad) -> Result<String, VaultError> {
        let plaintext = self.open(sealed, aad)?;
        Ok(self.seal(&plaintext, aad))
    }

    fn key(&self, id: &str) -> Option<&MasterKey> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|key| key.id == id)
    }
}

impl fmt::Debug for Vault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let previous: Vec<&str> = self.previous.iter().map(MasterKey::id).collect();
        f.debug_struct("Vault")
            .field("current_key_id", &self.current.id)
            .field("previous_key_ids", &previous)
            .finish()
    }
}

/// The parts of `v1:<key id>:<nonce>:<ciphertext+tag>`.
struct Sealed<'a> {
    key_id: &'a str,
    nonce: [u8; NONCE_LEN],
    ciphertext: Vec<u8>,
}

impl<'a> Sealed<'a> {
    fn parse(text: &'a str) -> Result<Sealed<'a>, VaultError> {
        let malformed = |reason| VaultError::Malformed { reason };
        let mut parts = text.split(':');
        let (Some(version), Some(key_id), Some(nonce), Some(ciphertext), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(malformed("not four ':'-separated parts"));
        };
        if version != FORMAT_VERSION {
            return Err(malformed("unknown format version"));
        }
        if key_id.len() != KEY_ID_HEX_LEN
            || !key_id
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(malformed("key id is not 16 lowercase hex characters"));
        }
        let nonce: [u8; NONCE_LEN] = URL_SAFE_NO_PAD
            .decode(nonce)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or(malformed("nonce is not 12 bytes of base64url"))?;
        let ciphertext = URL_SAFE_NO_PAD
            .decode(ciphertext)
            .map_err(|_| malformed("ciphertext is not base64url"))?;
        if ciphertext.len() < TAG_LEN {
            return Err(malformed("ciphertext is shorter than its tag"));
        }
        Ok(Sealed {
            key_id,
            nonce,
            ciphertext,
        })
    }
}

/// Parses `PIXGW_MASTER_KEY_PREVIOUS`: comma-separated, blank entries ignored (but counted, so
/// an error names the entry the operator sees).
fn parse_previous_keys(text: &str) -> Result<Vec<MasterKey>, VaultError> {
    text.split(',')
        .map(str::trim)
        .enumerate()
        .filter(|(_, entry)| !entry.is_empty())
        .map(|(i, entry)| MasterKey::parse(entry, &format!("{PREVIOUS_KEYS_ENV} entry {}", i + 1)))
        .collect()
}

/// The key in `path`, created there if absent; `true` when it was created now.
fn load_or_create_dev_key(data_dir: &Path, path: &Path) -> Result<(MasterKey, bool), VaultError> {
    let io_error = |source| VaultError::DevKeyIo {
        path: path.to_owned(),
        source,
    };
    fs::create_dir_all(data_dir).map_err(io_error)?;
    // `create_new` makes creation atomic: of two processes starting together, one creates the
    // file and the other reads it.
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            let key = MasterKey::generate();
            let encoded = key.to_base64();
            file.write_all(encoded.as_bytes())
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.sync_all())
                .map_err(|e| {
                    // Leave no empty key file behind: the next start should just try again.
                    let _ = fs::remove_file(path);
                    io_error(e)
                })?;
            Ok((key, true))
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok((read_dev_key(path)?, false)),
        Err(e) => Err(io_error(e)),
    }
}

fn read_dev_key(path: &Path) -> Result<MasterKey, VaultError> {
    let io_error = |source| VaultError::DevKeyIo {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io_error)?;
    let mode = file.metadata().map_err(io_error)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(VaultError::DevKeyPermissions {
            path: path.to_owned(),
            mode,
        });
    }
    // Another process may have just created the file and not yet written the key: wait briefly
    // for it rather than fail the race.
    let mut text = Zeroizing::new(String::with_capacity(64));
    for _ in 0..10 {
        file.read_to_string(&mut text).map_err(io_error)?;
        if !text.trim().is_empty() {
            return MasterKey::parse(&text, &path.display().to_string());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(VaultError::DevKeyEmpty {
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Fixed keys: 32 bytes of 0x00..0x1f and 32 bytes of 0xff.
    const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY_B: &str = "//////////////////////////////////////////8=";

    fn key(text: &str) -> MasterKey {
        MasterKey::from_base64(text).unwrap()
    }

    fn vault(current: &str, previous: &[&str]) -> Vault {
        Vault::new(key(current), previous.iter().map(|k| key(k)).collect())
    }

    fn aad() -> Aad {
        Aad::new(
            "psp_credentials",
            "0190f3a2-7c1e-7d2b-9a4e-2f6b1c8d9e0a",
            "client_secret",
        )
    }

    /// Rebuilds a sealed value from its decoded parts, so tests can alter bytes, not text.
    fn assemble(key_id: &str, nonce: &[u8], ciphertext: &[u8]) -> String {
        format!(
            "v1:{key_id}:{}:{}",
            URL_SAFE_NO_PAD.encode(nonce),
            URL_SAFE_NO_PAD.encode(ciphertext)
        )
    }

    #[test]
    fn key_id_is_derived_from_the_key() {
        assert_eq!(key(KEY_A).id(), "03f9b901fd45a2d6");
        assert_eq!(key(KEY_B).id(), "d9d5d6485f2fba8c");
        assert_eq!(key(&format!("  {KEY_A}\n")).id(), key(KEY_A).id());
    }

    #[test]
    fn seal_then_open_round_trips() {
        let vault = vault(KEY_A, &[]);
        let sealed = vault.seal(b"s3cr3t-client-secret", &aad());
        assert!(sealed.starts_with(&format!("v1:{}:", vault.current_key_id())));
        assert!(!sealed.contains("s3cr3t"));
        assert_eq!(
            &vault.open(&sealed, &aad()).unwrap()[..],
            b"s3cr3t-client-secret"
        );
        assert_eq!(
            vault.open_string(&sealed, &aad()).unwrap().as_str(),
            "s3cr3t-client-secret"
        );
    }

    #[test]
    fn empty_plaintext_round_trips() {
        let vault = vault(KEY_A, &[]);
        let sealed = vault.seal(b"", &aad());
        assert_eq!(&vault.open(&sealed, &aad()).unwrap()[..], b"");
    }

    #[test]
    fn each_seal_uses_a_fresh_nonce() {
        let vault = vault(KEY_A, &[]);
        let first = vault.seal(b"same", &aad());
        let second = vault.seal(b"same", &aad());
        assert_ne!(first, second);
        assert_ne!(first.split(':').nth(2), second.split(':').nth(2));
        assert_eq!(&vault.open(&first, &aad()).unwrap()[..], b"same");
        assert_eq!(&vault.open(&second, &aad()).unwrap()[..], b"same");
    }

    #[test]
    fn a_value_moved_to_another_record_or_field_is_tampered() {
        let vault = vault(KEY_A, &[]);
        let sealed = vault.seal(
            b"secret",
            &Aad::new("psp_credentials", "rec-1", "client_secret"),
        );
        for other in [
            Aad::new("psp_credentials", "rec-2", "client_secret"),
            Aad::new("psp_credentials", "rec-1", "webhook_token"),
            Aad::new("merchants", "rec-1", "client_secret"),
        ] {
            assert!(matches!(
                vault.open(&sealed, &other),
                Err(VaultError::Tampered)
            ));
        }
    }

    #[test]
    fn aad_has_the_documented_bytes() {
        assert_eq!(
            Aad::new("psp_credentials", "r:1", "private_key").as_bytes(),
            b"pixgw:v1:psp_credentials:r:1:private_key"
        );
    }

    #[test]
    #[should_panic(expected = "must not contain ':'")]
    fn aad_rejects_a_colon_in_a_field_name() {
        Aad::new("psp_credentials", "r", "a:b");
    }

    #[test]
    fn any_flipped_bit_in_nonce_or_ciphertext_is_tampered() {
        let vault = vault(KEY_A, &[]);
        let sealed = vault.seal(b"secret", &aad());
        let parts = Sealed::parse(&sealed).unwrap();
        let id = vault.current_key_id();
        for bit in 0..NONCE_LEN * 8 {
            let mut nonce = parts.nonce;
            nonce[bit / 8] ^= 1 << (bit % 8);
            let altered = assemble(id, &nonce, &parts.ciphertext);
            assert!(
                matches!(vault.open(&altered, &aad()), Err(VaultError::Tampered)),
                "nonce bit {bit}"
            );
        }
        for bit in 0..parts.ciphertext.len() * 8 {
            let mut ciphertext = parts.ciphertext.clone();
            ciphertext[bit / 8] ^= 1 << (bit % 8);
            let altered = assemble(id, &parts.nonce, &ciphertext);
            assert!(
                matches!(vault.open(&altered, &aad()), Err(VaultError::Tampered)),
                "ciphertext bit {bit}"
            );
        }
    }

    #[test]
    fn truncated_or_garbage_is_malformed() {
        let vault = vault(KEY_A, &[]);
        let sealed = vault.seal(b"secret", &aad());
        let id = vault.current_key_id();
        let parts = Sealed::parse(&sealed).unwrap();
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "not four ':'-separated parts"),
            ("hello".into(), "not four ':'-separated parts"),
            (
                sealed[..sealed.rfind(':').unwrap()].into(),
                "not four ':'-separated parts",
            ),
            (format!("{sealed}:extra"), "not four ':'-separated parts"),
            (sealed.replacen("v1:", "v2:", 1), "unknown format version"),
            (
                sealed.replacen(id, "XYZ", 1),
                "key id is not 16 lowercase hex characters",
            ),
            (
                assemble(id, &parts.nonce[..11], &parts.ciphertext),
                "nonce is not 12 bytes of base64url",
            ),
            (
                format!(
                    "v1:{id}:!!!!!!!!!!!!!!!!:{}",
                    URL_SAFE_NO_PAD.encode(&parts.ciphertext)
                ),
                "nonce is not 12 bytes of base64url",
            ),
            (
                format!("v1:{id}:{}:not base64", URL_SAFE_NO_PAD.encode(parts.nonce)),
                "ciphertext is not base64url",
            ),
            (
                assemble(id, &parts.nonce, &parts.ciphertext[..TAG_LEN - 1]),
                "ciphertext is shorter than its tag",
            ),
        ];
        for (text, expected) in cases {
            match vault.open(&text, &aad()) {
                Err(VaultError::Malformed { reason }) => assert_eq!(reason, expected, "{text:?}"),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_value_under_an_unknown_key_names_the_key() {
        let sealed = vault(KEY_A, &[]).seal(b"secret", &aad());
        let err = vault(KEY_B, &[]).open(&sealed, &aad()).unwrap_err();
        assert!(matches!(&err, VaultError::UnknownKey { key_id } if key_id == "03f9b901fd45a2d6"));
        assert_eq!(
            err.to_string(),
            "sealed under key 03f9b901fd45a2d6, which this gateway does not have: \
             set PIXGW_MASTER_KEY_PREVIOUS to the old key to rotate"
        );
    }

    #[test]
    fn rotation_moves_a_value_to_the_current_key() {
        let under_a = vault(KEY_A, &[]).seal(b"secret", &aad());
        let rotating = vault(KEY_B, &[KEY_A]);
        assert_eq!(&rotating.open(&under_a, &aad()).unwrap()[..], b"secret");
        assert_eq!(rotating.key_id_of(&under_a).unwrap(), "03f9b901fd45a2d6");
        assert!(rotating.needs_rotation(&under_a));

        let under_b = rotating.reseal(&under_a, &aad()).unwrap();
        assert_eq!(rotating.key_id_of(&under_b).unwrap(), "d9d5d6485f2fba8c");
        assert!(!rotating.needs_rotation(&under_b));
        assert_eq!(
            &vault(KEY_B, &[]).open(&under_b, &aad()).unwrap()[..],
            b"secret"
        );
        assert!(matches!(
            vault(KEY_A, &[]).open(&under_b, &aad()),
            Err(VaultError::UnknownKey { key_id }) if key_id == "d9d5d6485f2fba8c"
        ));
        // Resealing keeps the binding: the new value still opens only for its own place.
        assert!(matches!(
            rotating.open(
                &under_b,
                &Aad::new("psp_credentials", "other", "client_secret")
            ),
            Err(VaultError::Tampered)
        ));
    }

    #[test]
    fn a_malformed_value_needs_rotation_so_reseal_reports_it() {
        let vault = vault(KEY_A, &[]);
        assert!(vault.needs_rotation("garbage"));
        assert!(matches!(
            vault.reseal("garbage", &aad()),
            Err(VaultError::Malformed { .. })
        ));
    }

    #[test]
    fn previous_keys_equal_to_the_current_one_are_dropped() {
        let vault = vault(KEY_A, &[KEY_A, KEY_B, KEY_B]);
        assert_eq!(
            format!("{vault:?}"),
            "Vault { current_key_id: \"03f9b901fd45a2d6\", previous_key_ids: [\"d9d5d6485f2fba8c\"] }"
        );
    }

    #[test]
    fn bad_base64_says_what_to_fix() {
        let err = MasterKey::from_base64("not*base64").unwrap_err();
        assert_eq!(
            err.to_string(),
            "PIXGW_MASTER_KEY is not valid base64 (invalid character at offset 3). \
             Generate one with: openssl rand -base64 32"
        );
    }

    #[test]
    fn a_key_of_the_wrong_length_says_what_to_fix() {
        let thirty_one = STANDARD.encode([7u8; 31]);
        let err = MasterKey::from_base64(&thirty_one).unwrap_err();
        assert!(matches!(err, VaultError::KeyWrongLength { len: 31, .. }));
        assert_eq!(
            err.to_string(),
            "PIXGW_MASTER_KEY must be the base64 of exactly 32 bytes; it decodes to 31 bytes. \
             Generate one with: openssl rand -base64 32"
        );
        assert_eq!(
            MasterKey::from_base64("").unwrap_err().to_string(),
            "PIXGW_MASTER_KEY must be the base64 of exactly 32 bytes; it decodes to 0 bytes. \
             Generate one with: openssl rand -base64 32"
        );
    }

    #[test]
    fn debug_output_holds_no_key_material() {
        let a = key(KEY_A);
        let shown = format!("{a:?} {:?}", vault(KEY_B, &[KEY_A]));
        assert_eq!(
            shown,
            "MasterKey { id: \"03f9b901fd45a2d6\", .. } \
             Vault { current_key_id: \"d9d5d6485f2fba8c\", previous_key_ids: [\"03f9b901fd45a2d6\"] }"
        );
        for secret in [KEY_A, KEY_B] {
            assert!(!shown.contains(secret.trim_end_matches('=')));
        }
        assert!(!shown.contains(&hex::encode(&a.bytes[..])));
    }

    #[test]
    fn the_env_key_wins_and_previous_keys_open_old_values() {
        let dir = tempfile::tempdir().unwrap();
        let (vault, source) =
            Vault::from_env_or_dev_file(Some(KEY_B), Some(&format!(" {KEY_A} ,")), dir.path())
                .unwrap();
        assert_eq!(source, KeySource::Env);
        assert_eq!(vault.current_key_id(), "d9d5d6485f2fba8c");
        let under_a = self::vault(KEY_A, &[]).seal(b"old", &aad());
        assert_eq!(&vault.open(&under_a, &aad()).unwrap()[..], b"old");
        assert!(!dir.path().join(DEV_KEY_FILE).exists());
    }

    #[test]
    fn a_bad_previous_key_names_its_entry() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            Vault::from_env_or_dev_file(Some(KEY_B), Some(&format!("{KEY_A},,abcd")), dir.path())
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "PIXGW_MASTER_KEY_PREVIOUS entry 3 must be the base64 of exactly 32 bytes; \
             it decodes to 3 bytes. Generate one with: openssl rand -base64 32"
        );
    }

    #[test]
    fn previous_keys_without_a_current_key_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Vault::from_env_or_dev_file(None, Some(KEY_A), dir.path()).unwrap_err();
        assert!(matches!(err, VaultError::PreviousWithoutCurrent));
        assert!(!dir.path().join(DEV_KEY_FILE).exists());
    }

    #[test]
    fn the_dev_key_file_is_created_0600_then_reread() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let path = data_dir.join(DEV_KEY_FILE);

        let (first, source) = Vault::from_env_or_dev_file(None, None, &data_dir).unwrap();
        assert_eq!(source, KeySource::DevFileCreated(path.clone()));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let (second, source) = Vault::from_env_or_dev_file(None, Some(" "), &data_dir).unwrap();
        assert_eq!(source, KeySource::DevFileRead(path.clone()));
        assert_eq!(second.current_key_id(), first.current_key_id());
        let sealed = first.seal(b"dev secret", &aad());
        assert_eq!(&second.open(&sealed, &aad()).unwrap()[..], b"dev secret");

        let on_disk = fs::read_to_string(&path).unwrap();
        assert_eq!(key(&on_disk).id(), first.current_key_id());
    }

    #[test]
    fn processes_starting_together_share_one_dev_key() {
        let dir = tempfile::tempdir().unwrap();
        let results: Vec<(String, KeySource)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let (vault, source) =
                            Vault::from_env_or_dev_file(None, None, dir.path()).unwrap();
                        (vault.current_key_id().to_owned(), source)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let created = results
            .iter()
            .filter(|(_, source)| matches!(source, KeySource::DevFileCreated(_)))
            .count();
        assert_eq!(created, 1);
        assert!(results.iter().all(|(id, _)| *id == results[0].0));
    }

    #[test]
    fn a_readable_dev_key_file_must_be_chmodded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DEV_KEY_FILE);
        fs::write(&path, format!("{KEY_A}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = Vault::from_env_or_dev_file(None, None, dir.path()).unwrap_err();
        assert!(matches!(
            err,
            VaultError::DevKeyPermissions { mode: 0o644, .. }
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "the development master key {p} is readable by group or others (mode 644): \
                 run chmod 600 {p}",
                p = path.display()
            )
        );

        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let (vault, source) = Vault::from_env_or_dev_file(None, None, dir.path()).unwrap();
        assert_eq!(source, KeySource::DevFileRead(path));
        assert_eq!(vault.current_key_id(), "03f9b901fd45a2d6");
    }

    #[test]
    fn an_empty_dev_key_file_says_to_delete_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DEV_KEY_FILE);
        fs::write(&path, "").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let err = Vault::from_env_or_dev_file(None, None, dir.path()).unwrap_err();
        assert!(matches!(&err, VaultError::DevKeyEmpty { path: p } if *p == path));
    }
}
