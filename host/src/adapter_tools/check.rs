//! `pixgw plugins check <dir|file>`: every adapter file loaded as `serve` loads it (compile,
//! instantiate, `manifest()`, WIT version, id), its manifest printed whole, and a non-zero exit
//! when the directory is missing or empty, a file fails, or a file would be skipped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};

use crate::runtime::registry::expected_id;
use crate::runtime::{
    Capabilities, FieldKind, LoadedAdapter, Manifest, PayerField, Runtime, RuntimeConfig,
    WebhookAuth,
};

/// One file's verdict.
pub enum Verdict {
    Ok(Arc<LoadedAdapter>),
    Failed {
        path: PathBuf,
        error: String,
    },
    /// In the directory but not something `serve` would load.
    Skipped {
        path: PathBuf,
        reason: String,
    },
}

impl Verdict {
    pub fn passed(&self) -> bool {
        matches!(self, Verdict::Ok(_))
    }
}

/// Checks `target` (a plugin directory or one `.wasm` file). Errors only when there is nothing
/// to check; each file's outcome is in its verdict.
pub async fn check(
    target: &Path,
    compile_cache_dir: Option<PathBuf>,
) -> anyhow::Result<Vec<Verdict>> {
    let (dir, files) = files_to_check(target)?;
    let runtime = Runtime::new(RuntimeConfig {
        plugin_dir: dir,
        compile_cache_dir,
        ..Default::default()
    })?;
    let mut verdicts = Vec::new();
    for (path, skipped) in files {
        verdicts.push(match skipped {
            Some(reason) => Verdict::Skipped { path, reason },
            None => match runtime.inspect(&path).await {
                Ok(adapter) => Verdict::Ok(adapter),
                Err(error) => Verdict::Failed {
                    path,
                    error: error.to_string(),
                },
            },
        });
    }
    Ok(verdicts)
}

/// The directory to load from and its files, each with the reason it would be skipped, if any.
/// Hidden files are left out: they are other tools' writes in progress (`.efi.wasm.tmp`).
fn files_to_check(target: &Path) -> anyhow::Result<(PathBuf, Vec<(PathBuf, Option<String>)>)> {
    let metadata = std::fs::metadata(target).with_context(|| {
        format!(
            "{} does not exist: build adapters first (`pixgw plugins build <crate>`, or \
             `cargo xtask plugins` in the pixgw repository)",
            target.display()
        )
    })?;
    if metadata.is_file() {
        let dir = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        let skipped = skip_reason(target);
        return Ok((dir, vec![(target.to_owned(), skipped)]));
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(target)
        .with_context(|| format!("cannot read the directory {}", target.display()))?
    {
        let path = entry?.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if path.is_file() && !hidden {
            let skipped = skip_reason(&path);
            files.push((path, skipped));
        }
    }
    files.sort();
    if files.is_empty() {
        bail!(
            "{} holds no adapter: put <provider-id>.wasm files there (`pixgw plugins build <crate> \
             --out {}`)",
            target.display(),
            target.display()
        );
    }
    Ok((target.to_owned(), files))
}

fn skip_reason(path: &Path) -> Option<String> {
    if expected_id(path).is_some() {
        return None;
    }
    Some(if path.extension().is_some_and(|e| e == "wasm") {
        "adapter files are named <provider-id>.wasm, the id in lowercase letters, digits, `-` or \
         `_` (the id the manifest declares)"
            .into()
    } else {
        "not a .wasm file: `serve` ignores it".into()
    })
}

/// The report `pixgw plugins check` prints: one block per file.
pub fn render(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for verdict in verdicts {
        match verdict {
            Verdict::Ok(adapter) => render_adapter(&mut out, adapter),
            Verdict::Failed { path, error } => {
                let _ = writeln!(out, "FAILED  {}\n        {error}\n", path.display());
            }
            Verdict::Skipped { path, reason } => {
                let _ = writeln!(out, "SKIPPED {}\n        {reason}\n", path.display());
            }
        }
    }
    let passed = verdicts.iter().filter(|v| v.passed()).count();
    let _ = writeln!(
        out,
        "{passed} of {} file(s) would serve{}",
        verdicts.len(),
        if passed == verdicts.len() {
            ""
        } else {
            ": fix the ones above"
        }
    );
    out
}

fn render_adapter(out: &mut String, adapter: &LoadedAdapter) {
    let m: &Manifest = &adapter.manifest;
    let size = std::fs::metadata(&adapter.path)
        .map(|m| m.len())
        .unwrap_or(0);
    let _ = writeln!(out, "ok      {}  {} ({})", m.id, m.display_name, m.kind);
    let _ = writeln!(
        out,
        "        file           {} ({} KB, sha256 {})",
        adapter.path.display(),
        size.div_ceil(1024),
        adapter.sha256
    );
    let _ = writeln!(out, "        contract       pixgw:psp@{}", m.wit_version);
    let _ = writeln!(out, "        credential fields");
    for f in &m.credential_fields {
        let kind = match f.kind {
            FieldKind::Text => "text",
            FieldKind::Secret => "secret",
            FieldKind::ClientCertificate => "client certificate (PEM)",
            FieldKind::ClientPrivateKey => "client private key (PEM)",
            FieldKind::ClientIdentity => "client certificate + key (PEM)",
        };
        let _ = write!(
            out,
            "          {:<16} {:<8} {kind}{}  \"{}\"",
            f.name,
            if f.required { "required" } else { "optional" },
            if f.multiline { ", multiline" } else { "" },
            f.label
        );
        if let Some(prefix) = &f.value_prefix {
            let _ = write!(
                out,
                "  prefix test {:?} live {:?}",
                prefix.test, prefix.live
            );
        }
        let _ = writeln!(out);
        if let Some(help) = &f.help {
            let _ = writeln!(out, "            {help}");
        }
    }
    let payer: Vec<&str> = m
        .required_payer_fields
        .iter()
        .map(|p| match p {
            PayerField::Email => "email",
            PayerField::Name => "name",
            PayerField::Document => "document",
        })
        .collect();
    let _ = writeln!(
        out,
        "        payer fields   {}",
        if payer.is_empty() {
            "none required".into()
        } else {
            payer.join(", ")
        }
    );
    let _ = writeln!(out, "        endpoints");
    for e in &m.endpoints {
        let _ = writeln!(out, "          {:<8} test {}", e.name, e.test_url);
        let _ = writeln!(out, "          {:<8} live {}", "", e.live_url);
    }
    let webhooks = match &m.webhook_auth {
        WebhookAuth::UrlToken => "the host's token in the notification URL".to_owned(),
        WebhookAuth::HeaderToken(name) => format!("the host's token in the `{name}` header"),
        WebhookAuth::PspSignature => {
            "the PSP's signature, verified by the adapter (and the URL's token)".to_owned()
        }
    };
    let _ = writeln!(out, "        notifications  {webhooks}");
    let capabilities: Vec<&str> = [
        (Capabilities::CANCEL_CHARGE, "cancel-charge"),
        (Capabilities::REGISTER_WEBHOOK, "register-webhook"),
        (Capabilities::CHECK_CREDENTIALS, "check-credentials"),
    ]
    .into_iter()
    .filter(|(flag, _)| m.capabilities.contains(*flag))
    .map(|(_, name)| name)
    .collect();
    let _ = writeln!(
        out,
        "        capabilities   {}\n",
        if capabilities.is_empty() {
            "none (create, query, notifications only)".into()
        } else {
            capabilities.join(", ")
        }
    );
}
