//! The compile cache directory's size bound.
//!
//! Every compile writes there: a whole artifact per adapter version (`<key>.cwasm`,
//! [`super::engine::AdapterEngine::compile`]) and an entry per newly compiled function
//! (`functions/`, [`super::function_cache::FunctionCache`]). Old versions' files are never read
//! again, so without a bound a gateway that hot-swaps adapters fills its disk. Reading a file
//! marks it used (its modification time); after a compile that wrote something, the least
//! recently used files go until the directory is within [`BUDGET`].

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Bytes the directory may hold: the thirteen adapters' artifacts and functions take about
/// 25 MB (an artifact about 0.9 MB), so many generations of swaps stay cached.
pub const BUDGET: u64 = 512 << 20;

/// Files used this recently stay whatever the budget: another process sharing the directory
/// may be compiling with them right now.
const IN_USE: Duration = Duration::from_secs(10 * 60);

/// Marks `path` used now, so pruning keeps it over files not used since.
pub fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().write(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// What [`prune`] removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub files: usize,
    pub bytes: u64,
}

/// Removes the least recently used artifacts and function entries under `dir` until the rest
/// fit in `budget` bytes, sparing files used in the last ten minutes and files being written.
pub fn prune(dir: &Path, budget: u64) -> std::io::Result<Pruned> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    collect(&dir.join("functions"), &mut files)?;
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    let mut pruned = Pruned::default();
    if total <= budget {
        return Ok(pruned);
    }
    let recent = SystemTime::now() - IN_USE;
    files.sort_by_key(|f| f.used);
    for file in files {
        if total <= budget || file.used > recent {
            break;
        }
        // Gone already (another process pruned it) counts as gone.
        match std::fs::remove_file(&file.path) {
            Ok(()) => {
                pruned.files += 1;
                pruned.bytes += file.bytes;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        total -= file.bytes;
    }
    Ok(pruned)
}

struct CachedFile {
    path: PathBuf,
    bytes: u64,
    used: SystemTime,
}

/// The cache's files directly in `dir`: artifacts or function entries, never a file another
/// writer has not finished (`*.tmp*`, renamed into place when complete).
fn collect(dir: &Path, out: &mut Vec<CachedFile>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.contains(".tmp") {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        out.push(CachedFile {
            path: entry.path(),
            bytes: meta.len(),
            used: meta.modified()?,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &Path, bytes: usize, age: Duration) {
        std::fs::write(path, vec![0u8; bytes]).unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn the_least_recently_used_go_until_the_rest_fit() {
        let dir = tempfile::tempdir().unwrap();
        let functions = dir.path().join("functions");
        std::fs::create_dir(&functions).unwrap();
        file(&dir.path().join("old.cwasm"), 400, 5 * HOUR);
        file(&dir.path().join("new.cwasm"), 400, HOUR);
        file(&functions.join("aa"), 100, 4 * HOUR);
        file(&functions.join("bb"), 100, 2 * HOUR);
        file(&functions.join("cc.tmp7-ThreadId(2)"), 100, 9 * HOUR);

        // 1,000 bytes of entries (the unfinished one not counted), 550 allowed: the artifact
        // and the function used longest ago go, and nothing newer.
        let pruned = prune(dir.path(), 550).unwrap();
        assert_eq!(
            pruned,
            Pruned {
                files: 2,
                bytes: 500
            }
        );
        assert_eq!(names(dir.path()), ["functions", "new.cwasm"]);
        assert_eq!(names(&functions), ["bb", "cc.tmp7-ThreadId(2)"]);

        // Within the budget: nothing more goes.
        assert_eq!(prune(dir.path(), 550).unwrap(), Pruned::default());
    }

    #[test]
    fn a_file_just_used_stays_even_over_budget() {
        let dir = tempfile::tempdir().unwrap();
        file(&dir.path().join("a.cwasm"), 300, 3 * HOUR);
        file(&dir.path().join("b.cwasm"), 300, 2 * HOUR);
        // Used now: kept, although the directory stays over its budget.
        touch(&dir.path().join("a.cwasm"));
        let pruned = prune(dir.path(), 100).unwrap();
        assert_eq!(
            pruned,
            Pruned {
                files: 1,
                bytes: 300
            }
        );
        assert_eq!(names(dir.path()), ["a.cwasm"]);
    }
}
