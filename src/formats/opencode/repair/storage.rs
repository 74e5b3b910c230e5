//! Repair of OpenCode's legacy JSON storage folder: each file OpenCode cannot parse
//! (`storage-file-damaged`) is moved aside into a quarantine folder next to the storage folder,
//! under the same relative path. Nothing is deleted and no file is rewritten.
//!
//! The safety conventions of the database repair, for files:
//!
//! 1. plan: scan the folder; a file changed less than [`QUIET`] ago is left alone (OpenCode may
//!    be writing it) unless forced;
//! 2. each move re-reads the file first and moves it only if it is still damaged and unchanged;
//!    a move is a rename (atomic on one file system), or a copy that is read back and compared
//!    before the original is removed;
//! 3. verify: every moved file is in the quarantine with its size, none of them is left in the
//!    folder, and the folder's sessions read again;
//! 4. a second run finds nothing to move (idempotent); a dry run writes nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use thiserror::Error;

use crate::formats::opencode::storage::{self as storage, DamagedFile, damage_of};

/// How long a file must have been left alone before it is moved: younger files may be in the
/// middle of being written.
pub const QUIET: Duration = Duration::from_secs(10 * 60);

/// The name of the note written into each quarantine folder.
pub const NOTE: &str = "REWIND-QUARANTINE.txt";

#[derive(Debug, Error)]
pub enum StorageRepairError {
    #[error(
        "`{path}` is not an OpenCode storage folder (no `session/` and `message/` in it or in `storage/`)"
    )]
    NotStorage { path: PathBuf },
    #[error("cannot read the storage folder: {0}")]
    Scan(std::io::Error),
    #[error(
        "cannot move `{from}` to `{to}`: {source}; the files moved before it are in the quarantine folder"
    )]
    Move {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the check after the repair failed: {0}")]
    Verify(String),
}

/// A damaged file moved (or, in a dry run, to move) into the quarantine.
#[derive(Clone, Debug, Serialize)]
pub struct Move {
    /// The path under the storage folder.
    pub file: String,
    /// `session`, `message`, `part`, `project` or `other`.
    pub kind: &'static str,
    /// What was wrong with it.
    pub damage: String,
    pub damage_kind: &'static str,
    pub bytes: u64,
    pub from: PathBuf,
    pub to: PathBuf,
}

/// A damaged file left where it is, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Left {
    pub file: String,
    pub why: String,
}

/// What a storage repair did (or would do).
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The storage folder.
    pub root: PathBuf,
    /// Where the damaged files go (created only when something is moved).
    pub quarantine: PathBuf,
    pub moves: Vec<Move>,
    pub left: Vec<Left>,
    pub applied: bool,
    /// Sessions the folder holds after the repair (when applied and verified).
    pub sessions_after: Option<usize>,
}

/// `<root>.rewind-quarantine-<UTC time>` next to the storage folder (never an existing one).
fn quarantine_path(root: &Path) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = chrono::DateTime::from_timestamp(i64::try_from(secs).unwrap_or(0), 0)
        .map_or_else(|| "now".into(), |t| t.format("%Y%m%dT%H%M%SZ").to_string());
    let name = root
        .file_name()
        .map_or_else(|| "storage".into(), |n| n.to_string_lossy().into_owned());
    let parent = root.parent().unwrap_or(Path::new("."));
    let base = parent.join(format!("{name}.rewind-quarantine-{stamp}"));
    let mut path = base.clone();
    let mut n = 1;
    while path.exists() {
        path = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    path
}

fn age(file: &DamagedFile) -> Option<Duration> {
    SystemTime::now().duration_since(file.modified?).ok()
}

/// Plans (and unless `dry_run`, applies) the repair of the storage folder at `path` (the folder
/// itself, or the data folder holding it).
pub fn repair(path: &Path, force: bool, dry_run: bool) -> Result<Outcome, StorageRepairError> {
    let root = storage::root(path).ok_or_else(|| StorageRepairError::NotStorage {
        path: path.to_path_buf(),
    })?;
    let quarantine = quarantine_path(&root);
    let mut moves = Vec::new();
    let mut left = Vec::new();
    let real_root = std::fs::canonicalize(&root).map_err(StorageRepairError::Scan)?;
    for d in storage::damaged(&root).map_err(StorageRepairError::Scan)? {
        // A file whose folder lies outside the storage folder (reached through a linked folder)
        // is not the folder's to move; a link that lies in it is moved itself, not its target.
        let folder = d.path.parent().and_then(|f| std::fs::canonicalize(f).ok());
        if let Some(folder) = folder.filter(|f| !f.starts_with(&real_root)) {
            left.push(Left {
                file: d.rel.clone(),
                why: format!(
                    "it lies outside the storage folder, in `{}` (a linked folder leads there): rewind moves nothing outside the folder; move it aside yourself, or remove the link",
                    folder.display()
                ),
            });
            continue;
        }
        let young = age(&d).is_none_or(|a| a < QUIET);
        if young && !force {
            left.push(Left {
                file: d.rel.clone(),
                why: format!(
                    "changed {} ago: OpenCode may be writing it (close OpenCode and run again after {} minutes, or use --force when no OpenCode is running)",
                    age(&d).map_or_else(|| "moments".into(), |a| format!("{} s", a.as_secs())),
                    QUIET.as_secs() / 60
                ),
            });
            continue;
        }
        moves.push(Move {
            to: quarantine.join(&d.rel),
            kind: d.kind.name(),
            damage: d.damage.describe(d.len),
            damage_kind: d.damage.kind(),
            bytes: d.len,
            file: d.rel,
            from: d.path,
        });
    }
    let mut outcome = Outcome {
        root: root.clone(),
        quarantine,
        moves,
        left,
        applied: false,
        sessions_after: None,
    };
    if dry_run || outcome.moves.is_empty() {
        return Ok(outcome);
    }
    let mut done = Vec::new();
    for m in std::mem::take(&mut outcome.moves) {
        // The file may have been rewritten since the scan: move it only if it is still damaged.
        match std::fs::read(&m.from) {
            Ok(bytes) if bytes.len() as u64 == m.bytes && damage_of(&bytes).is_some() => {}
            Ok(_) => {
                outcome.left.push(Left {
                    file: m.file.clone(),
                    why: "it changed while rewind planned (OpenCode may be writing it)".into(),
                });
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                outcome.left.push(Left {
                    file: m.file.clone(),
                    why: "it is gone (removed while rewind planned)".into(),
                });
                continue;
            }
            Err(source) => {
                return Err(StorageRepairError::Move {
                    from: m.from,
                    to: m.to,
                    source,
                });
            }
        }
        move_file(&m.from, &m.to).map_err(|source| StorageRepairError::Move {
            from: m.from.clone(),
            to: m.to.clone(),
            source,
        })?;
        done.push(m);
    }
    outcome.moves = done;
    if outcome.moves.is_empty() {
        return Ok(outcome);
    }
    outcome.applied = true;
    write_note(&outcome);
    outcome.sessions_after = Some(verify(&outcome)?);
    Ok(outcome)
}

/// Renames `from` to `to`; across file systems, copies, reads the copy back, then removes
/// `from`.
fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if to.exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "the quarantine already holds a file there",
        ));
    }
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    let original = std::fs::read(from)?;
    {
        use std::io::Write;
        let mut f = std::fs::File::create_new(to)?;
        f.write_all(&original)?;
        f.sync_all()?;
    }
    if std::fs::read(to)? != original {
        return Err(std::io::Error::other(
            "the copy in the quarantine differs from the original (the original was kept)",
        ));
    }
    std::fs::remove_file(from)
}

/// A note in the quarantine folder: what each file is, what was wrong, how to put it back. A
/// note that cannot be written is no failure (the report says the same).
fn write_note(outcome: &Outcome) {
    let mut text = format!(
        "Files moved here by `rewind repair` from the OpenCode storage folder\n{}\nbecause OpenCode cannot parse them. Nothing was deleted. To put a file back, move it to\nthe same path under the storage folder.\n\n",
        std::path::absolute(&outcome.root)
            .unwrap_or_else(|_| outcome.root.clone())
            .display()
    );
    for m in &outcome.moves {
        text += &format!("{} ({} file): {}\n", m.file, m.kind, m.damage);
    }
    let _ = std::fs::write(outcome.quarantine.join(NOTE), text);
}

/// Checks the folder after the moves; returns how many sessions it holds.
fn verify(outcome: &Outcome) -> Result<usize, StorageRepairError> {
    let mut problems = Vec::new();
    for m in &outcome.moves {
        if m.from.exists() {
            problems.push(format!("`{}` is still in the storage folder", m.file));
        }
        // A link is moved as it is (its target is never touched): it is there, whatever it
        // names from its new place.
        match std::fs::symlink_metadata(&m.to) {
            Ok(meta) if meta.file_type().is_symlink() => {}
            Ok(meta) if meta.len() == m.bytes => {}
            Ok(meta) => problems.push(format!(
                "`{}` has {} bytes in the quarantine, not {}",
                m.to.display(),
                meta.len(),
                m.bytes
            )),
            Err(e) => problems.push(format!("`{}`: {e}", m.to.display())),
        }
    }
    let still = storage::damaged(&outcome.root).map_err(StorageRepairError::Scan)?;
    let left: crate::FastSet<&str> = outcome.left.iter().map(|l| l.file.as_str()).collect();
    for d in &still {
        if !left.contains(&d.rel.as_str()) {
            problems.push(format!("`{}` is still damaged", d.rel));
        }
    }
    if !problems.is_empty() {
        return Err(StorageRepairError::Verify(problems.join("; ")));
    }
    storage::sessions(&outcome.root)
        .map(|s| s.len())
        .map_err(|e| StorageRepairError::Verify(format!("the folder does not read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarantine_lies_next_to_the_folder() {
        let q = quarantine_path(Path::new("/data/opencode/storage"));
        let name = q.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(q.parent(), Some(Path::new("/data/opencode")));
        assert!(name.starts_with("storage.rewind-quarantine-"), "{name}");
    }
}
