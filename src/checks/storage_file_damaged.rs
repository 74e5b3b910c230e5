use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::damaged::{Damage, FileKind};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports a file of OpenCode's legacy JSON storage folder (`storage/`) that OpenCode cannot
    /// parse: empty, all NUL bytes, NUL bytes after some text, JSON cut short, or not JSON. It
    /// names the file, says what is wrong and points at the byte where it shows. Every JSON file
    /// under the folder is read (projects, sessions, messages, parts, todos, shares, diffs); the
    /// rest of the folder is diagnosed without the damaged files.
    ///
    /// ## Why it matters
    /// A crash or a power loss in the middle of a write leaves a file zero-filled, empty or cut
    /// short, and OpenCode parses each file whole. OpenCode before 1.2, which reads this folder,
    /// lists a project's sessions by reading every session file: one it cannot parse makes the
    /// whole list fail, so *all* the project's sessions seem gone while their files are intact.
    /// A damaged message or part file makes its session fail to open. OpenCode 1.2 and later
    /// imports the folder into `opencode.db` once, when it creates the database, and skips
    /// every file it cannot parse: a damaged session file leaves the session and all its
    /// messages out, a damaged message file its parts, a damaged project file every session
    /// filed under the project.
    ///
    /// ## Example
    /// ```text
    /// storage/session/global/ses_405cda89affeNw04UbeaVEBJX2.json   413 bytes, all 0x00
    /// ```
    ///
    /// ## How to fix
    /// Close OpenCode, then `rewind repair STORAGE` (the `storage/` folder or the data folder
    /// holding it): it moves each damaged file aside into a quarantine folder next to
    /// `storage/` (nothing is deleted), keeping its path, and checks that the folder then reads
    /// cleanly. `--dry-run` shows the moves first. What the damaged file held is lost (it never
    /// reached the disk); the other sessions list again. To import the folder again with
    /// OpenCode 1.2 or later, move `opencode.db` (with `-wal` and `-shm`) aside before starting
    /// it.
    pub struct StorageFileDamaged {
        name: "storage-file-damaged",
        severity: Error,
        summary: "A file of OpenCode's storage folder cannot be parsed (empty, NUL bytes, cut short, not JSON)",
        fix: "a damaged storage file: moved aside into a quarantine folder next to `storage/`, its path kept (never deleted)",
    }
}

/// What OpenCode does with a damaged file of this kind.
fn consequence(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Session => {
            "OpenCode before 1.2 fails to list the sessions of this project (all of them seem gone); the import into opencode.db skips this session and all its messages"
        }
        FileKind::Message => {
            "OpenCode before 1.2 fails to open this session; the import into opencode.db skips this message and its parts"
        }
        FileKind::Part => {
            "OpenCode before 1.2 fails to open this session; the import into opencode.db skips this part"
        }
        FileKind::Project => {
            "the import into opencode.db skips this project and every session filed under it"
        }
        FileKind::Other => "OpenCode cannot read it; the import into opencode.db skips it",
    }
}

fn label(damage: &Damage) -> &'static str {
    match damage {
        Damage::Empty => "no JSON in this file",
        Damage::AllNul => "NUL bytes from the first byte to the last",
        Damage::NulFrom { .. } => "NUL bytes from here on",
        Damage::Truncated { .. } => "the file ends here, inside a value",
        Damage::NotJson { .. } => "not JSON here",
    }
}

impl Check for StorageFileDamaged {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for d in &analysis.damaged_files {
            let f = &d.file;
            let mut ids = Ids::default();
            let owner = f.owner();
            match f.kind {
                FileKind::Session => ids.session_id = Some(f.id()),
                FileKind::Message => {
                    ids.session_id = owner;
                    ids.message_id = Some(f.id());
                }
                FileKind::Part => {
                    ids.message_id = owner;
                    ids.part_id = Some(f.id());
                }
                FileKind::Project | FileKind::Other => {}
            }
            out.push(
                Self::META
                    .finding(format!(
                        "{} file `{}` cannot be parsed: {}",
                        f.kind.name(),
                        f.rel,
                        f.damage.describe(f.len)
                    ))
                    .at(d.span, label(&f.damage))
                    .note(consequence(f.kind))
                    .help("close OpenCode, then `rewind repair` on the storage folder moves the file aside into a quarantine folder (nothing is deleted)")
                    .ids(ids),
            );
        }
    }
}
