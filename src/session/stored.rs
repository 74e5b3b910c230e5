//! Stored OpenCode sessions as their stores hold them: each record's text or model with its place
//! in the store, which replay reads and a repair edits. The OpenCode format loads them.

use serde_json::Value;

use crate::model::{MessageInfo, Part, read};
use crate::source::FileId;

/// Where a stored record's text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A database row: rendered into the message's virtual source.
    Row,
    /// The exact bytes of a file at `offset` (an export item, a storage file).
    At { file: FileId, offset: u64 },
}

/// One stored message or part: its id and its JSON text as stored, or what the model keeps of
/// it when it was read while loading (see [`StoredRecord::read_row`]).
#[derive(Clone, Debug)]
pub struct StoredRecord {
    pub id: String,
    /// The JSON text (empty when `preread` holds the model).
    pub text: String,
    pub place: Place,
    pub preread: Option<Preread>,
}

/// What reading a record as it was loaded gave: its model, when its text satisfies the schema
/// (the text itself was not kept: such a record cannot be rendered, so a session is loaded again,
/// text and all, when it has to be shown), or `Slow` when it does not read that way.
#[derive(Clone, Debug, PartialEq)]
pub enum Preread {
    Info(Box<MessageInfo>),
    Part(Box<Part>),
    /// Tried and not read: [`replay`] takes the slow way straight away.
    Slow,
}

/// Which kind of record a text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Info,
    Part,
}

impl StoredRecord {
    /// A record kept as text.
    pub fn new(id: String, text: String, place: Place) -> StoredRecord {
        StoredRecord {
            id,
            text,
            place,
            preread: None,
        }
    }

    /// A database row, read straight into the model when it satisfies the schema (most rows
    /// do; the text is then dropped), kept as text otherwise, for [`replay`] to validate.
    pub fn read_row(id: String, text: &str, kind: Kind) -> StoredRecord {
        let preread = match kind {
            Kind::Info => fast_info(text).map(Preread::Info),
            Kind::Part => fast_part(text).map(Preread::Part),
        }
        .unwrap_or(Preread::Slow);
        StoredRecord {
            id,
            text: match preread {
                Preread::Slow => text.to_owned(),
                _ => String::new(),
            },
            place: Place::Row,
            preread: Some(preread),
        }
    }
}

/// A message info that satisfies the schema, read straight into the model.
pub fn fast_info(text: &str) -> Option<Box<MessageInfo>> {
    read::message(text).map(Box::new)
}

/// A part that satisfies the schema, read straight into the model.
pub fn fast_part(text: &str) -> Option<Box<Part>> {
    read::part(text).map(Box::new)
}

/// A stored message with its parts, in OpenCode's order (parts by id).
#[derive(Clone, Debug, Default)]
pub struct StoredMessage {
    pub id: String,
    pub info: Option<StoredRecord>,
    pub parts: Vec<StoredRecord>,
}

/// A stored session with its messages, in OpenCode's replay order.
#[derive(Clone, Debug, Default)]
pub struct StoredSession {
    pub id: String,
    pub title: Option<String>,
    pub parent_id: Option<String>,
    pub version: Option<String>,
    pub time_created: Option<i64>,
    pub time_updated: Option<i64>,
    /// The project the session is filed under, and the folder it was started in.
    pub project_id: Option<String>,
    pub directory: Option<String>,
    pub messages: Vec<StoredMessage>,
    /// The messages are rows of the v2 `session_message` store (`crate::formats::opencode::v2`).
    pub runtime_v2: bool,
    /// Which table of an OpenCode 2.x store holds the session's row.
    pub generation: Option<super::Generation>,
}

impl StoredSession {
    /// A session without messages yet, from its `Session.Info` JSON (export `info`, storage
    /// `session/<project>/<id>.json`): id, title, parent, version and times.
    pub fn from_info(info: &Value) -> StoredSession {
        let s = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_owned);
        let t = |k: &str| {
            info.get("time")
                .and_then(|t| t.get(k))
                .and_then(Value::as_i64)
        };
        StoredSession {
            id: s("id").unwrap_or_default(),
            title: s("title"),
            parent_id: s("parentID"),
            version: s("version"),
            time_created: t("created"),
            time_updated: t("updated"),
            project_id: s("projectID"),
            directory: s("directory"),
            messages: Vec::new(),
            runtime_v2: false,
            generation: None,
        }
    }
}
