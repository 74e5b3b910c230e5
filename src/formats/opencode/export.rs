//! `opencode export` documents: `{info, messages: [{info, parts: [...]}], todos}` (one session,
//! ids kept in the JSON, `opencode-storage.md` §4).
//!
//! The document is read whole (it is one session) and each message and part is located in it in
//! one pass, so labels point at the exact bytes of the user's file.

use serde_json::Value;

use super::stored::{Place, StoredMessage, StoredRecord, StoredSession};
use crate::json::scan::{self as json_scan, Seg};
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

/// An export cut short (`head -c N`, a partial download): its text up to the end of the last
/// complete object in an array (a message, a part), with the brackets still open after it closed,
/// so that everything before the cut can be read. The prefix is kept as it is, so offsets in the
/// returned text are offsets in the file. Also returns where the unfinished rest starts (after
/// the comma and blanks that follow the kept object). `None` when no such object is complete.
pub fn close_cut(text: &str) -> Option<(String, usize)> {
    let b = text.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut kept: Option<(usize, Vec<u8>)> = None;
    for (i, &c) in b.iter().enumerate() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => stack.push(c),
            b'}' | b']' => {
                stack.pop();
                if c == b'}' && stack.last() == Some(&b'[') {
                    kept = Some((i + 1, stack.clone()));
                }
            }
            _ => {}
        }
    }
    let (end, open) = kept?;
    let mut closed = String::with_capacity(end + open.len());
    closed.push_str(text.get(..end)?);
    closed.extend(
        open.iter()
            .rev()
            .map(|&c| if c == b'[' { ']' } else { '}' }),
    );
    let rest = text.get(end..)?;
    let skipped = rest.len() - rest.trim_start_matches([',', ' ', '\t', '\r', '\n']).len();
    Some((closed, end + skipped))
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

    #[test]
    fn a_cut_export_is_read_up_to_its_last_complete_part() {
        let text = r#"{"info": {"id": "ses_1"}, "messages": [{"info": {"id": "msg_1"}, "parts": [{"id": "prt_1", "text": "a}]"}, {"id": "prt_2", "text": "cut h"#;
        let (closed, rest) = close_cut(text).unwrap();
        assert!(text[rest..].starts_with(r#"{"id": "prt_2""#));
        let s = load(&closed, FileId(0)).unwrap();
        assert_eq!(s.messages[0].parts.len(), 1);
        assert_eq!(s.messages[0].parts[0].id, "prt_1");
        assert!(close_cut(r#"{"info": {"id": "ses_1"}, "messages": [{"info": {"#).is_none());
    }
}
