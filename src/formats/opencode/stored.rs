//! Stored OpenCode sessions: each message and part as its store holds it (a database row, an
//! export item, a storage file), in OpenCode's replay order, with where its text is. The readers
//! of each store (`opencode_db`, `opencode_export`, `opencode_storage`) produce these; replay
//! turns them into the session model.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::db::{Db, DbError, SessionRow};
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
    pub generation: Option<super::db::Generation>,
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

/// What [`load_db_session`] keeps of each row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The text of every row: to render the rows, or to edit them.
    Text,
    /// The model of each row that satisfies the schema, read as the row streams by (its text
    /// is not copied); the text of the others, for the replay to validate.
    Model,
}

/// Reads one session's rows: its messages, and its parts attached to them (parts whose message
/// is not in the session are counted, not kept).
pub fn load_db_session(
    db: &Db,
    row: SessionRow,
    keep: Keep,
) -> Result<(StoredSession, u64), DbError> {
    let record = |id: Cow<'_, str>, text: Cow<'_, str>, kind: Kind| match keep {
        Keep::Text => StoredRecord::new(id.into_owned(), text.into_owned(), Place::Row),
        Keep::Model => StoredRecord::read_row(id.into_owned(), &text, kind),
    };
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut messages: Vec<StoredMessage> = Vec::new();
    db.for_each_message(&row.id, |r| {
        index.insert(r.id.to_string(), messages.len());
        messages.push(StoredMessage {
            id: r.id.to_string(),
            info: Some(record(r.id, r.data, Kind::Info)),
            parts: Vec::new(),
        });
    })?;
    let mut orphans = 0;
    // Parts mostly arrive message by message: the last message found is tried first.
    let mut last: Option<usize> = None;
    db.for_each_part(&row.id, |p| {
        let found = last
            .filter(|&i| messages[i].id == p.message_id)
            .or_else(|| index.get(p.message_id.as_ref()).copied());
        last = found;
        match found {
            Some(i) => messages[i].parts.push(record(p.id, p.data, Kind::Part)),
            None => orphans += 1,
        }
    })?;
    // OpenCode orders the parts of a message by id (rows arrive in storage order).
    for m in &mut messages {
        if !m.parts.is_sorted_by(|a, b| a.id <= b.id) {
            m.parts.sort_by(|a, b| a.id.cmp(&b.id));
        }
    }
    // A session of the v2 runtime keeps its conversation in `session_message` instead.
    let mut runtime_v2 = false;
    // OpenCode 2.x reads a `session_v2` session from `session_message` (its import rewrites a
    // 1.x session's rows there; the 1.x copy stays behind, unread).
    let v2_row = row.generation == Some(super::db::Generation::V2);
    if (messages.is_empty() || v2_row) && db.schema.v2_store {
        let mut rows: Vec<(String, String, String)> = Vec::new();
        db.for_each_session_message(&row.id, |r| {
            rows.push((r.id.into_owned(), r.kind.into_owned(), r.data.into_owned()));
        })?;
        runtime_v2 = !rows.is_empty();
        if runtime_v2 {
            messages.clear();
        }
        let mut reader = super::v2::Reader::new(row.directory.as_deref().unwrap_or(""));
        for (_, kind, data) in &rows {
            reader.prime(kind, data);
        }
        let mut rec = |id: String, text: String, kind: Kind| record(id.into(), text.into(), kind);
        for (id, kind, data) in &rows {
            let row = super::v2::Row { id, kind, data };
            messages.extend(reader.read(&row, &mut rec));
        }
    }
    Ok((
        StoredSession {
            id: row.id,
            title: row.title,
            parent_id: row.parent_id,
            version: row.version,
            time_created: row.time_created,
            time_updated: row.time_updated,
            project_id: row.project_id,
            directory: row.directory,
            messages,
            runtime_v2,
            generation: row.generation,
        },
        orphans,
    ))
}
