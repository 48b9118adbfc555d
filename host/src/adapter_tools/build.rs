//! `pixgw plugins build <crate> --out <dir>`: compile an adapter crate to a wasm32-wasip2
//! component with its `wasm` profile, check it as `serve` would load it, and only then put
//! `<id>.wasm` in `<dir>` with one rename, so a gateway watching `<dir>` never sees half a file
//! or a component that would not serve.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use serde::Deserialize;

use super::check::{self, Verdict};

pub const WASM_TARGET: &str = "wasm32-wasip2";

/// What was built and where it now is.
pub struct Built {
    pub id: String,
    pub installed: PathBuf,
    pub report: String,
}

/// The crate's package name and where cargo puts its build.
struct CrateInfo {
    package: String,
    target_dir: PathBuf,
}

fn crate_info(manifest: &Path) -> anyhow::Result<CrateInfo> {
    #[derive(Deserialize)]
    struct Metadata {
        packages: Vec<Package>,
        target_directory: PathBuf,
    }
    #[derive(Deserialize)]
    struct Package {
        name: String,
        manifest_path: PathBuf,
    }
    let output = Command::new(cargo())
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .context("cannot run cargo: is Rust installed (https://rustup.rs)?")?;
    ensure!(
        output.status.success(),
        "cargo cannot read {}: {}",
        manifest.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let metadata: Metadata = serde_json::from_slice(&output.stdout)?;
    let package = metadata
        .packages
        .into_iter()
        .find(|p| p.manifest_path == manifest)
        .with_context(|| format!("{} defines no package", manifest.display()))?;
    Ok(CrateInfo {
        package: package.name,
        target_dir: metadata.target_directory,
    })
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The provider id a crate builds: `pixgw-plugin-acme` → `acme` (else the package name).
pub fn provider_id(package: &str) -> String {
    package
        .strip_prefix("pixgw-plugin-")
        .or_else(|| package.strip_suffix("-adapter"))
        .unwrap_or(package)
        .to_owned()
}

/// Builds, checks and installs the adapter of the crate at `crate_dir` into `out`.
pub async fn build(
    crate_dir: &Path,
    out: &Path,
    compile_cache_dir: Option<PathBuf>,
) -> anyhow::Result<Built> {
    let manifest = crate_dir.join("Cargo.toml");
    ensure!(
        manifest.is_file(),
        "{} has no Cargo.toml: give the adapter crate's directory (`pixgw plugins new` makes one)",
        crate_dir.display()
    );
    let manifest = manifest.canonicalize()?;
    let info = crate_info(&manifest)?;
    let id = provider_id(&info.package);

    let status = Command::new(cargo())
        .current_dir(crate_dir)
        .args([
            "build",
            "--target",
            WASM_TARGET,
            "--profile",
            "wasm",
            "--manifest-path",
        ])
        .arg(&manifest)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!(
            "cargo build failed (above). If it says \"can't find crate for `std`\", the \
             {WASM_TARGET} target is missing: `rustup target add {WASM_TARGET}`"
        );
    }
    let artifact = info
        .target_dir
        .join(WASM_TARGET)
        .join("wasm")
        .join(format!("{}.wasm", info.package.replace('-', "_")));
    ensure!(
        artifact.is_file(),
        "cargo built no {}: is the crate's [lib] crate-type [\"cdylib\"]?",
        artifact.display()
    );

    // Checked in a private staging directory first: a component that would not serve never
    // reaches `out`.
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let staging = out.join(format!(".pixgw-build-{id}-{}", std::process::id()));
    std::fs::create_dir_all(&staging)?;
    let staged = staging.join(format!("{id}.wasm"));
    let result = async {
        std::fs::copy(&artifact, &staged)
            .with_context(|| format!("cannot copy {}", artifact.display()))?;
        let verdicts = check::check(&staged, compile_cache_dir).await?;
        let report = check::render(&verdicts);
        if !verdicts.iter().all(Verdict::passed) {
            bail!("{report}the component was not installed");
        }
        let installed = out.join(format!("{id}.wasm"));
        std::fs::rename(&staged, &installed)
            .with_context(|| format!("cannot move the component to {}", installed.display()))?;
        Ok(Built {
            id: id.clone(),
            installed,
            report: report.replace(
                &staged.display().to_string(),
                &out.join(format!("{id}.wasm")).display().to_string(),
            ),
        })
    }
    .await;
    let _ = std::fs::remove_dir_all(&staging);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_from_package_names() {
        assert_eq!(provider_id("pixgw-plugin-acme-bank"), "acme-bank");
        assert_eq!(provider_id("hostile-adapter"), "hostile");
        assert_eq!(provider_id("acme"), "acme");
    }
}
