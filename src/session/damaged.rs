//! Files of a legacy OpenCode storage folder that OpenCode cannot parse, as the session model
//! holds them.

use std::path::{Path, PathBuf};

/// What makes a storage file unreadable to OpenCode, which parses each file whole with
/// `JSON.parse`: a crash in the middle of a write leaves a file empty, zero-filled or cut short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Damage {
    /// No bytes, or only whitespace.
    Empty,
    /// Every byte is NUL (the file was extended but its data never reached the disk).
    AllNul,
    /// NUL bytes from `offset` on, after text (a block that was never written).
    NulFrom { offset: u64 },
    /// The JSON ends before its value is closed: the file was cut at `offset` (its length).
    Truncated { offset: u64 },
    /// Not JSON from `offset` on.
    NotJson { offset: u64, reason: String },
}

impl Damage {
    /// What is wrong, in words, for a file of `len` bytes.
    pub fn describe(&self, len: u64) -> String {
        match self {
            Damage::Empty if len == 0 => "the file is empty (0 bytes)".into(),
            Damage::Empty => format!("the file holds only whitespace ({len} bytes), no JSON"),
            Damage::AllNul => format!("all {len} bytes of the file are NUL (0x00), no JSON"),
            Damage::NulFrom { offset } => format!(
                "NUL bytes (0x00) from byte {offset} of {len}: a block of the file was never written"
            ),
            Damage::Truncated { offset } => {
                format!("the JSON is cut short at byte {offset}: the file ends inside a value")
            }
            Damage::NotJson { offset, reason } => {
                format!("not JSON at byte {offset}: {reason}")
            }
        }
    }

    /// A short name for machine output.
    pub fn kind(&self) -> &'static str {
        match self {
            Damage::Empty => "empty",
            Damage::AllNul => "all-nul",
            Damage::NulFrom { .. } => "nul-bytes",
            Damage::Truncated { .. } => "truncated",
            Damage::NotJson { .. } => "not-json",
        }
    }

    /// Where a label points in a file of `len` bytes (offset, length): the byte where the
    /// damage shows; the file's start, with no byte to quote, when it holds nothing but the
    /// damage (empty, or all NUL).
    pub fn span(&self, len: u64) -> (u64, u64) {
        match self {
            Damage::Empty | Damage::AllNul => (0, 0),
            Damage::NulFrom { offset } | Damage::NotJson { offset, .. } => {
                (*offset, u64::from(len > *offset))
            }
            Damage::Truncated { .. } => (len.saturating_sub(1), u64::from(len > 0)),
        }
    }
}

/// What a storage file holds, from where it lies (`opencode-storage.md` §1.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Project,
    Session,
    Message,
    Part,
    /// Todos, permissions, shares, diffs and anything else OpenCode keeps there.
    Other,
}

impl FileKind {
    /// The kind of the file at `rel` (relative to the storage root).
    pub fn of(rel: &Path) -> FileKind {
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        match parts.as_slice() {
            ["project", _] => FileKind::Project,
            ["session", "message", _, _] => FileKind::Message,
            ["session", "part", _, _, _] => FileKind::Part,
            ["session", _, _] => FileKind::Session,
            ["message", _, _] => FileKind::Message,
            ["part", _, _] => FileKind::Part,
            _ => FileKind::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FileKind::Project => "project",
            FileKind::Session => "session",
            FileKind::Message => "message",
            FileKind::Part => "part",
            FileKind::Other => "other",
        }
    }
}

/// A storage file OpenCode cannot parse.
#[derive(Clone, Debug)]
pub struct DamagedFile {
    pub path: PathBuf,
    /// The path under the storage root, with `/` separators (`session/global/ses_….json`).
    pub rel: String,
    pub kind: FileKind,
    pub len: u64,
    pub damage: Damage,
    /// When it was last written.
    pub modified: Option<std::time::SystemTime>,
}

impl DamagedFile {
    /// The session, message or part id the file is named by.
    pub fn id(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The folder it lies in (a session file's project, a message file's session, a part
    /// file's message).
    pub fn owner(&self) -> Option<String> {
        self.path
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
    }
}
