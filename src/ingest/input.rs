//! Inputs that can be read only once: standard input (`-`), FIFOs, `/dev/stdin`, process
//! substitution (`<(…)`). Recognising the format reads the start of the input and printing a
//! finding reads its lines again, so such an input is copied once, to the end, into a private
//! temporary file (see [`super::private`]) and every later read goes to the copy. The copy is on
//! disk, not in memory, so a large stream costs no memory; it is removed when rewind exits.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::DetectError;
use super::private::PrivatePath;

/// Copies made so far: (the path as given, its copy).
static SPOOLED: Mutex<Vec<(PathBuf, Arc<PrivatePath>)>> = Mutex::new(Vec::new());

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Names of standard input: `-` and the device files that stand for it. One copy serves all.
fn stdin_alias(path: &Path) -> bool {
    is_stdin(path)
        || ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]
            .iter()
            .any(|p| path == Path::new(p))
}

/// Whether `path` is read once: standard input or anything that is neither a regular file nor
/// a folder (a FIFO, a character device such as `/dev/stdin`, a socket).
/// SQLite's 16-byte file header.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Whether the file at `path` starts with [`SQLITE_HEADER`] (an SQLite database).
pub fn is_sqlite_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == SQLITE_HEADER)
}

pub fn is_one_shot(path: &Path) -> bool {
    is_stdin(path) || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The path to read `path` from: `path` itself for a regular file or a folder; for a one-shot
/// input (see [`is_one_shot`]), a private copy made on the first call, read to the end once.
pub fn readable(path: &Path) -> Result<PathBuf, DetectError> {
    if !is_one_shot(path) {
        return Ok(path.to_path_buf());
    }
    let io = |source| DetectError::Io {
        path: path.to_path_buf(),
        source,
    };
    // The lock is held while copying, so two threads asking for one input read it once.
    let mut spooled = SPOOLED.lock().map_err(|_| {
        io(std::io::Error::other(
            "a thread failed while copying this input",
        ))
    })?;
    let key = if stdin_alias(path) {
        Path::new("-")
    } else {
        path
    };
    if let Some((_, copy)) = spooled.iter().find(|(p, _)| p == key) {
        return Ok(copy.path().to_path_buf());
    }
    let (copy, mut out) = PrivatePath::new_file("input").map_err(io)?;
    // The copy is what reads the input: its bytes are the ones a progress indicator counts.
    let copied = if is_stdin(key) {
        std::io::copy(&mut super::Counted(std::io::stdin().lock(), true), &mut out)
    } else {
        std::fs::File::open(path)
            .and_then(|f| std::io::copy(&mut super::Counted(f, true), &mut out))
    };
    copied.map_err(io)?;
    let read = copy.path().to_path_buf();
    spooled.push((key.to_path_buf(), Arc::new(copy)));
    Ok(read)
}

/// Removes the copies (at the end of a run).
pub fn forget_all() {
    if let Ok(mut spooled) = SPOOLED.lock() {
        spooled.clear();
    }
}
