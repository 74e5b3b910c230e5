//! Stored OpenCode sessions: each message and part as its store holds it (a database row, an
//! export item, a storage file), in OpenCode's replay order, with where its text is. The readers
//! of each store (`opencode_db`, `opencode_export`, `opencode_storage`) produce these; replay
//! turns them into the session model.

use std::collections::HashMap;

use std::borrow::Cow;

pub use crate::session::stored::*;

use super::db::{Db, DbError, SessionRow};
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
