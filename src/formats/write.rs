//! Writing a repaired file safely, for every format's repair: a scratch file beside the
//! original, synced, renamed into place, the folder synced; leftovers of a killed repair removed.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::ingest::private::Tracked;

/// A test hook: `REWIND_TEST_ABORT_AT=<point>` aborts the process at that point of a repair.
pub(crate) fn fault(point: &str) {
    if std::env::var("REWIND_TEST_ABORT_AT").is_ok_and(|p| p == point) {
        std::process::abort();
    }
}

/// A file being written: removed when dropped unless kept, and on SIGINT/SIGTERM.
pub(crate) struct Scratch {
    pub(crate) path: PathBuf,
    pub(crate) keep: bool,
    _signal: Tracked,
}

impl Scratch {
    pub(crate) fn new(path: PathBuf) -> Scratch {
        Scratch {
            _signal: Tracked::new(std::slice::from_ref(&path)),
            path,
            keep: false,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `bytes` to a new file at `path` and flushes it to disk.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Flushes the folder holding `path` (so that a rename in it is on disk).
pub(crate) fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
}

/// A process that has a file open for writing (see [`open_writers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Writer {
    pub(crate) pid: u32,
    /// Its command name (`/proc/<pid>/comm`), when it can be read.
    pub(crate) name: Option<String>,
}

impl std::fmt::Display for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "process {} ({name})", self.pid),
            None => write!(f, "process {}", self.pid),
        }
    }
}

/// The processes that have the file at `path` open for writing, as far as this process can see
/// them; `None` where the platform cannot tell. A repair that renames a new file over one a
/// process keeps open for writing loses what that process writes afterwards (it goes to the
/// file the rename unlinked), and no modification time says it is coming while the process is
/// idle (Codex keeps its rollout open between turns).
///
/// On Linux: every `/proc/<pid>/fd/<n>` that links to the file, with `/proc/<pid>/fdinfo/<n>`'s
/// `flags` opening it write-only or read-write. Processes of other users are not visible to an
/// unprivileged run.
pub(crate) fn open_writers(path: &Path) -> Option<Vec<Writer>> {
    #[cfg(target_os = "linux")]
    {
        let target = std::fs::canonicalize(path).ok()?;
        let mut out: Vec<Writer> = Vec::new();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let proc = entry.path();
            let Ok(fds) = std::fs::read_dir(proc.join("fd")) else {
                continue;
            };
            let writes = fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l == target)
                    && std::fs::read_to_string(proc.join("fdinfo").join(fd.file_name()))
                        .is_ok_and(|info| writes_to(&info))
            });
            if writes {
                let name = std::fs::read_to_string(proc.join("comm"))
                    .ok()
                    .map(|n| n.trim_end().to_owned());
                out.push(Writer { pid, name });
            }
        }
        Some(out)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// Whether a `/proc/<pid>/fdinfo/<n>` text opens its file for writing: its `flags` (octal)
/// hold `O_WRONLY` (1) or `O_RDWR` (2) in the access mode bits.
#[cfg(any(target_os = "linux", test))]
fn writes_to(fdinfo: &str) -> bool {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & 0o3 != 0)
}

/// Removes the files next to `path` that `stale` picks, given `path`'s file name and each one's:
/// what a killed repair of `path` left behind (partial backups, temporary files).
pub(crate) fn remove_next_to(path: &Path, stale: impl Fn(&str, &str) -> bool) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(f) = file.to_str() else { continue };
        if stale(name, f) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_flags_tell_writers() {
        assert!(writes_to("pos:\t0\nflags:\t0102001\nmnt_id:\t30\n"));
        assert!(writes_to("pos:\t0\nflags:\t02\n"));
        assert!(!writes_to("pos:\t0\nflags:\t0100000\nmnt_id:\t30\n"));
        assert!(!writes_to("pos:\t0\n"));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_file_this_process_holds_open_for_writing_has_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        let me = std::process::id();
        let mine = |w: &Vec<Writer>| w.iter().any(|w| w.pid == me);
        assert!(!mine(&open_writers(&path).unwrap()), "not open yet");
        let reader = std::fs::File::open(&path).unwrap();
        assert!(
            !mine(&open_writers(&path).unwrap()),
            "open for reading only"
        );
        let writer = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let writers = open_writers(&path).unwrap();
        assert!(mine(&writers), "{writers:?}");
        // Named through another path (a link) it is the same file.
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(mine(&open_writers(&link).unwrap()));
        drop(writer);
        assert!(!mine(&open_writers(&path).unwrap()), "closed");
        drop(reader);
    }
}
