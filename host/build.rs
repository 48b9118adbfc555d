//! Joins the dashboard's message catalogs: every `dashboard/i18n/<lang>/*.txt` (one file per
//! area of the dashboard) becomes one `<lang>.txt` in OUT_DIR, which `web::i18n` compiles in.
//! Two files giving the same key fail the build, naming both.

use std::collections::HashMap;
use std::path::Path;

fn main() {
    // Read when the script runs, not when it was compiled: one compiled script serves every
    // checkout that shares a target directory.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("../dashboard/i18n");
    println!("cargo::rerun-if-changed={}", root.display());
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for lang in ["pt-BR", "en"] {
        let dir = root.join(lang);
        println!("cargo::rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a readable directory").path())
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .collect();
        files.sort();
        let mut joined = String::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        for file in files {
            println!("cargo::rerun-if-changed={}", file.display());
            let text = std::fs::read_to_string(&file).expect("a UTF-8 catalog");
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            for line in text.lines().map(str::trim) {
                if let Some((key, _)) = line.split_once(" = ")
                    && !line.starts_with('#')
                    && let Some(other) = seen.insert(key.trim().to_owned(), name.clone())
                {
                    panic!("{lang}: key {key:?} is in both {other} and {name}");
                }
            }
            joined.push_str(&text);
            joined.push('\n');
        }
        std::fs::write(Path::new(&out).join(format!("{lang}.txt")), joined)
            .expect("writing OUT_DIR");
    }
}
