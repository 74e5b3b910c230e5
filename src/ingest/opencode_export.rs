//! `opencode export` documents: `{info, messages: [{info, parts: [...]}], todos}` (one session,
//! ids kept in the JSON, `opencode-storage.md` §4).
//!
//! The document is read whole (it is one session) and each message and part is located in it in
//! one pass, so labels point at the exact bytes of the user's file.

use serde_json::Value;

use super::stored::{Place, StoredMessage, StoredRecord, StoredSession};
use crate::json_scan::{self, Seg};
use crate::source::FileId;

/// Why an export could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("not an `opencode export` document: {0}")]
    Shape(String),
}

/// The string value at `key` of the object `text`, when it is a plain string.
fn str_at(text: &str, key: &str) -> Option<String> {
    let (s, e) = json_scan::locate(text, &[Seg::Key(key)])?;
    match serde_json::from_str::<Value>(&text[s..e]) {
        Ok(Value::String(v)) => Some(v),
        _ => None,
    }
}

/// Reads the session of an export whose whole text is `text` (from source `file`).
pub fn load(text: &str, file: FileId) -> Result<StoredSession, ExportError> {
    let (is, ie) = json_scan::locate(text, &[Seg::Key("info")])
        .ok_or_else(|| ExportError::Shape("it has no `info` object".into()))?;
    let info: Value = serde_json::from_str(&text[is..ie]).map_err(|e| {
        ExportError::Shape(format!(
            "`info` is not JSON ({})",
            crate::text::clip(&e.to_string())
        ))
    })?;
    let items = json_scan::array_items(text, &[Seg::Key("messages")])
        .ok_or_else(|| ExportError::Shape("it has no `messages` array".into()))?;
    let mut session = StoredSession::from_info(&info);
    let at = |start: usize| Place::At {
        file,
        offset: start as u64,
    };
    for (ms, me) in items {
        let item = &text[ms..me];
        let mut message = StoredMessage::default();
        if let Some((s0, e0)) = json_scan::locate(item, &[Seg::Key("info")]) {
            let info_text = &item[s0..e0];
            message.id = str_at(info_text, "id").unwrap_or_default();
            message.info = Some(StoredRecord::new(
                message.id.clone(),
                info_text.to_owned(),
                at(ms + s0),
            ));
        }
        for (ps, pe) in json_scan::array_items(item, &[Seg::Key("parts")]).unwrap_or_default() {
            let part_text = &item[ps..pe];
            message.parts.push(StoredRecord::new(
                str_at(part_text, "id").unwrap_or_default(),
                part_text.to_owned(),
                at(ms + ps),
            ));
        }
        message.parts.sort_by(|a, b| a.id.cmp(&b.id));
        session.messages.push(message);
    }
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_every_message_and_part() {
        let text = r#"{"info": {"id": "ses_1", "title": "t", "version": "1.2.3"},
 "messages": [
  {"info": {"id": "msg_1", "role": "user"}, "parts": [{"id": "prt_2", "type": "text", "text": "b"}, {"id": "prt_1", "type": "text", "text": "a"}]}
 ]}"#;
        let s = load(text, FileId(0)).unwrap();
        assert_eq!(s.id, "ses_1");
        assert_eq!(s.version.as_deref(), Some("1.2.3"));
        let m = &s.messages[0];
        assert_eq!(m.id, "msg_1");
        assert_eq!(m.parts[0].id, "prt_1");
        let Place::At { offset, .. } = m.parts[0].place else {
            panic!()
        };
        assert!(text[offset as usize..].starts_with(r#"{"id": "prt_1""#));
        assert!(load("{}", FileId(0)).is_err());
    }
}
