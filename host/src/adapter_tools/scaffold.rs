//! `pixgw plugins new <id> [--central-bank]`: a new adapter crate that builds on its own, outside
//! this repository: explicit dependency versions (no workspace inheritance), the `wasm` profile,
//! the pinned toolchain with its wasm target, `src/lib.rs` with every knob listed, fake-host
//! tests, and a README whose facts table a reviewer checks the code against.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail, ensure};

use crate::runtime::registry::expected_id;

/// What to scaffold.
pub struct NewAdapter {
    /// Provider id: lowercase, the adapter's file name and its public `provider` value.
    pub id: String,
    /// Display name; from the id when not given.
    pub name: Option<String>,
    /// A bank on the central bank's Pix API (facts only) rather than a JSON API.
    pub central_bank: bool,
    /// The directory to create (must not exist or be empty).
    pub dir: PathBuf,
    /// The SDK's source directory, for a path dependency; else the published version alone.
    pub sdk: Option<PathBuf>,
}

/// The SDK of the checkout this `pixgw` was built from, when it is still there.
pub fn sdk_of_this_build() -> Option<PathBuf> {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-sdk");
    sdk.join("Cargo.toml")
        .is_file()
        .then(|| sdk.canonicalize().unwrap_or(sdk))
}

const CARGO_TOML: &str = include_str!("templates/Cargo.toml.tmpl");
const README: &str = include_str!("templates/README.md.tmpl");
const GITIGNORE: &str = include_str!("templates/gitignore.tmpl");
const CENTRAL_BANK: &str = include_str!("templates/central_bank.rs.tmpl");
const REST: &str = include_str!("templates/rest.rs.tmpl");
/// The toolchain this gateway is built with, wasm target included.
const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");

/// Writes the crate; returns the files written, relative to `dir`.
pub fn scaffold(new: &NewAdapter) -> anyhow::Result<Vec<PathBuf>> {
    let id = &new.id;
    ensure!(
        expected_id(Path::new(&format!("{id}.wasm"))).as_deref() == Some(id.as_str())
            && id.as_bytes()[0].is_ascii_lowercase(),
        "{id:?} cannot be a provider id: use lowercase letters, digits, `-` or `_`, starting with a \
         letter (e.g. `acme` or `acme-bank`)"
    );
    if new.dir.exists() {
        let empty = std::fs::read_dir(&new.dir)
            .with_context(|| format!("cannot read {}", new.dir.display()))?
            .next()
            .is_none();
        ensure!(
            empty,
            "{} exists and is not empty: choose another --dir",
            new.dir.display()
        );
    }
    let name = new.name.clone().unwrap_or_else(|| {
        id.split(['-', '_'])
            .map(title_case)
            .collect::<Vec<_>>()
            .join(" ")
    });
    if name.contains(['"', '\\', '\n']) {
        bail!("the display name may not contain quotes, backslashes or line breaks");
    }
    let type_name: String = id.split(['-', '_']).map(title_case).collect::<String>();
    // The SDK's major version is the contract's: an adapter built with 2.x speaks pixgw:psp@2.
    let sdk_dependency = match &new.sdk {
        Some(path) => format!(
            "pixgw-plugin-sdk = {{ version = \"{major}\", path = {:?} }}",
            path.display().to_string(),
            major = crate::runtime::registry::WIT_MAJOR,
        ),
        None => format!(
            "pixgw-plugin-sdk = \"{}\"",
            crate::runtime::registry::WIT_MAJOR
        ),
    };
    let (lib, summary, sim_as, wheres) = if new.central_bank {
        (
            CENTRAL_BANK,
            "A bank on the central bank's Pix API: this crate states the bank's facts, the SDK's \
             `CentralBankAdapter` does the rest.",
            "bradesco",
            [
                "`token_path`, `token_body`, `client_auth`, `scopes`",
                "`path_prefix`, `create_statuses`",
                "the txid is our reference (`PUT /cob/{txid}`); `duplicate_txid_codes`",
                "`status_aliases`",
            ],
        )
    } else {
        (
            REST,
            "A PSP with a JSON API and an API key.",
            "<a simulated PSP of the same shape>",
            [
                "`authorised` (the API key as a bearer token)",
                "`create`",
                "the `idempotency-key` header in `create`",
                "`PspCharge::charge`",
            ],
        )
    };
    let fill = |template: &str| {
        template
            .replace("{{id}}", id)
            .replace("{{name}}", &name)
            .replace("{{Type}}", &type_name)
            .replace("{{CONST}}", &id.to_uppercase().replace('-', "_"))
            .replace("{{sdk_dependency}}", &sdk_dependency)
            .replace("{{summary}}", summary)
            .replace("{{sim_as}}", sim_as)
            .replace("{{token_where}}", wheres[0])
            .replace("{{create_where}}", wheres[1])
            .replace("{{idempotency_where}}", wheres[2])
            .replace("{{status_where}}", wheres[3])
    };
    let files: [(&str, String); 5] = [
        ("Cargo.toml", fill(CARGO_TOML)),
        ("rust-toolchain.toml", TOOLCHAIN.to_owned()),
        (".gitignore", GITIGNORE.to_owned()),
        ("README.md", fill(README)),
        ("src/lib.rs", fill(lib)),
    ];
    std::fs::create_dir_all(new.dir.join("src"))
        .with_context(|| format!("cannot create {}", new.dir.display()))?;
    let mut written = Vec::new();
    // With a checkout's SDK, its lock file too: the crate then builds with the versions the
    // SDK was tested with (cargo drops the entries it does not need).
    if let Some(lock) = new
        .sdk
        .as_ref()
        .map(|sdk| sdk.join("../Cargo.lock"))
        .filter(|l| l.is_file())
    {
        std::fs::copy(&lock, new.dir.join("Cargo.lock"))
            .with_context(|| format!("cannot copy {}", lock.display()))?;
        written.push(PathBuf::from("Cargo.lock"));
    }
    for (path, contents) in files {
        let full = new.dir.join(path);
        std::fs::write(&full, contents)
            .with_context(|| format!("cannot write {}", full.display()))?;
        written.push(PathBuf::from(path));
    }
    Ok(written)
}

fn title_case(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(id: &str, dir: &Path) -> NewAdapter {
        NewAdapter {
            id: id.into(),
            name: None,
            central_bank: true,
            dir: dir.join(id),
            sdk: Some("/opt/pixgw/plugin-sdk".into()),
        }
    }

    #[test]
    fn a_central_bank_crate_is_its_facts_with_explicit_versions() {
        let tmp = tempfile::tempdir().unwrap();
        let written = scaffold(&new("acme-bank", tmp.path())).unwrap();
        assert_eq!(written.len(), 5);
        let dir = tmp.path().join("acme-bank");
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            cargo.contains("name = \"pixgw-plugin-acme-bank\""),
            "{cargo}"
        );
        assert!(
            cargo.contains(
                r#"pixgw-plugin-sdk = { version = "2", path = "/opt/pixgw/plugin-sdk" }"#
            ),
            "{cargo}"
        );
        assert!(!cargo.contains(".workspace"), "no inheritance: {cargo}");
        assert!(cargo.contains("[profile.wasm]") && cargo.contains("\n[workspace]\n"));
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(
            lib.contains("impl CentralBankAdapter for AcmeBank"),
            "{lib}"
        );
        assert!(lib.contains("const ACME_BANK: CentralBankPsp"), "{lib}");
        assert!(lib.contains("export!(AcmeBank);"));
        assert!(!lib.contains("{{"), "every placeholder filled: {lib}");
        let toolchain = std::fs::read_to_string(dir.join("rust-toolchain.toml")).unwrap();
        assert!(toolchain.contains("wasm32-wasip2"));
    }

    #[test]
    fn bad_ids_and_used_directories_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in ["Acme", "acme.bank", "1acme", "", "acme bank"] {
            let error = scaffold(&new(bad, tmp.path())).unwrap_err().to_string();
            assert!(
                error.contains("cannot be a provider id"),
                "{bad:?}: {error}"
            );
        }
        std::fs::create_dir_all(tmp.path().join("acme")).unwrap();
        std::fs::write(tmp.path().join("acme/keep"), "").unwrap();
        let error = scaffold(&new("acme", tmp.path())).unwrap_err().to_string();
        assert!(error.contains("is not empty"), "{error}");
    }
}
