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
