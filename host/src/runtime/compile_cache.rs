//! The compile cache directory's size bound.
//!
//! Every compile writes there: a whole artifact per adapter version (`<key>.cwasm`,
//! [`super::engine::AdapterEngine::compile`]) and an entry per newly compiled function
//! (`functions/`, [`super::function_cache::FunctionCache`]). Old versions' files are never read
//! again, so without a bound a gateway that hot-swaps adapters fills its disk. Reading a file
//! marks it used (its modification time); when compiles have written enough to take the
//! directory past [`BUDGET`], the least recently used files go until it is within it.
//!
//! Both happen after the compile, on a thread of their own ([`Upkeep`]): a hot swap reads a few
//! thousand function entries and pruning reads every file's metadata, work the new version
//! need not wait for before it serves.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
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

/// The thread that marks the files a compile read and prunes the directory after it.
/// Dropping it finishes what was asked first, so a restart sees every mark.
pub struct Upkeep {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

struct Job {
    used: Vec<PathBuf>,
    written: u64,
}

impl Upkeep {
    pub fn start(dir: PathBuf) -> std::io::Result<Upkeep> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("pixgw-cache-upkeep".into())
            .spawn(move || {
                let mut size = Size::new(dir, BUDGET);
                while let Ok(first) = queue.recv() {
                    // Compiles that finished meanwhile share one prune.
                    size.after(std::iter::once(first).chain(queue.try_iter()));
                }
            })?;
        Ok(Upkeep {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// After a compile: mark `used` (the files it read), and prune if the `written` bytes may
    /// have taken the directory over its budget.
    pub fn after_compile(&self, used: Vec<PathBuf>, written: u64) {
        if used.is_empty() && written == 0 {
            return;
        }
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job { used, written });
        }
    }
}

impl Drop for Upkeep {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The directory's bytes as of the last prune plus what compiles wrote since: pruning reads
/// every file's metadata, so it runs only when this passes the budget (another process sharing
/// the directory prunes after its own writes).
struct Size {
    dir: PathBuf,
    budget: u64,
    /// Unknown until the first prune, and after one that failed.
    bytes: Option<u64>,
}

impl Size {
    fn new(dir: PathBuf, budget: u64) -> Size {
        Size {
            dir,
            budget,
            bytes: None,
        }
    }

    /// Marks what `jobs` read, then prunes if what they wrote may pass the budget.
    fn after(&mut self, jobs: impl Iterator<Item = Job>) {
        let mut written = 0;
        for job in jobs {
            job.used.iter().for_each(|path| touch(path));
            written += job.written;
        }
        if written == 0 {
            return;
        }
        self.bytes = match self.bytes {
            Some(bytes) if bytes + written <= self.budget => Some(bytes + written),
            _ => log_prune(&self.dir, self.budget),
        };
    }
}

/// Prunes `dir` to `budget`, logging what went; the bytes left, if it could.
fn log_prune(dir: &Path, budget: u64) -> Option<u64> {
    match prune(dir, budget) {
        Ok(p) => {
            if p.files > 0 {
                tracing::info!(files = p.files, bytes = p.bytes, dir = %dir.display(), "pruned the compile cache");
            }
            Some(p.left)
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "could not prune the compile cache");
            None
        }
    }
}

/// What [`prune`] removed, and what it left.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub files: usize,
    pub bytes: u64,
    /// The bytes of the files still there.
    pub left: u64,
}

/// Removes the least recently used artifacts and function entries under `dir` until the rest
/// fit in `budget` bytes, sparing files used in the last ten minutes and files being written.
pub fn prune(dir: &Path, budget: u64) -> std::io::Result<Pruned> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    collect(&dir.join("functions"), &mut files)?;
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    let mut pruned = Pruned {
        left: total,
        ..Pruned::default()
    };
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
    pruned.left = total;
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
                bytes: 500,
                left: 500
            }
        );
        assert_eq!(names(dir.path()), ["functions", "new.cwasm"]);
        assert_eq!(names(&functions), ["bb", "cc.tmp7-ThreadId(2)"]);

        // Within the budget: nothing more goes.
        assert_eq!(
            prune(dir.path(), 550).unwrap(),
            Pruned {
                left: 500,
                ..Pruned::default()
            }
        );
    }

    fn job(used: &[&Path], written: u64) -> Job {
        Job {
            used: used.iter().map(|p| p.to_path_buf()).collect(),
            written,
        }
    }

    #[test]
    fn upkeep_marks_what_compiles_read_and_prunes_once_their_writes_pass_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let (old, read) = (dir.path().join("old.cwasm"), dir.path().join("read.cwasm"));
        file(&old, 400, 5 * HOUR);
        file(&read, 400, 4 * HOUR);
        let mut size = Size::new(dir.path().to_owned(), 600);

        // Reads alone change no size: marked, nothing pruned. (Then aged again, for the next
        // step to have one old file.)
        size.after([job(&[&old], 0)].into_iter());
        assert_eq!(names(dir.path()), ["old.cwasm", "read.cwasm"]);
        assert!(std::fs::metadata(&old).unwrap().modified().unwrap() > SystemTime::now() - HOUR);
        file(&old, 400, 5 * HOUR);

        // A compile that read one file and wrote another: the size is not known yet, so the
        // directory is pruned, after the mark, so the file read stays and the older one goes.
        file(&dir.path().join("new.cwasm"), 100, Duration::ZERO);
        size.after([job(&[&read], 100)].into_iter());
        assert_eq!(names(dir.path()), ["new.cwasm", "read.cwasm"]);
        assert_eq!(size.bytes, Some(500));

        // Writes the budget still holds are counted, not scanned for: a file another process
        // left stays until the count passes the budget.
        file(&dir.path().join("stray.cwasm"), 400, 9 * HOUR);
        size.after([job(&[], 50), job(&[], 50)].into_iter());
        assert_eq!(size.bytes, Some(600));
        assert_eq!(
            names(dir.path()),
            ["new.cwasm", "read.cwasm", "stray.cwasm"]
        );
        size.after([job(&[], 1)].into_iter());
        assert_eq!(names(dir.path()), ["new.cwasm", "read.cwasm"]);
        assert_eq!(size.bytes, Some(500));
    }

    #[test]
    fn upkeep_finishes_its_work_before_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let used = dir.path().join("used.cwasm");
        file(&used, 10, 3 * HOUR);
        let upkeep = Upkeep::start(dir.path().to_owned()).unwrap();
        upkeep.after_compile(vec![used.clone()], 0);
        drop(upkeep);
        let marked = std::fs::metadata(&used).unwrap().modified().unwrap();
        assert!(marked > SystemTime::now() - HOUR, "{marked:?}");
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
                bytes: 300,
                left: 300
            }
        );
        assert_eq!(names(dir.path()), ["a.cwasm"]);
    }
}
