//! Helpers for the JSON values a replay keeps: strings capped, inline images found, a second
//! value after the first.
//!
//! (Formerly the head of the replay stage.) Stage 2 of the pipeline: records → the session model.
//!
//! Each input kind has a replay that turns its records into an [`Analysis`]: sessions, messages
//! and parts (with every write that produced them) plus a timeline of events. For agent logs the
//! parts are rebuilt from the part payloads the agent echoed; for stream captures (see the
//! `stream` replays) they come from re-running the agent's stream processor.
//!
//! [`Analysis`]: crate::session::Analysis

use serde_json::Value;

/// Inline base64 images in a content value (Claude Code's `image` blocks with a base64
/// `source`, also inside `tool_result` content; Codex's `input_image` with a `data:` URL, also
/// in a tool output): the length of each one's data and the path to it from `at`.
pub fn inline_images(
    v: &Value,
    at: &mut Vec<crate::json::scan::Seg<'static>>,
    out: &mut Vec<(u64, Vec<crate::json::scan::Seg<'static>>)>,
) {
    use crate::json::scan::Seg;
    let Some(items) = v.as_array() else {
        return;
    };
    if at.len() > 8 {
        return;
    }
    for (k, item) in items.iter().enumerate() {
        let Some(o) = item.as_object() else {
            continue;
        };
        at.push(Seg::Index(k));
        match o.get("type").and_then(Value::as_str) {
            Some("image") => {
                if let Some(data) = o
                    .get("source")
                    .filter(|s| s.get("type").and_then(Value::as_str) == Some("base64"))
                    .and_then(|s| s.get("data"))
                    .and_then(Value::as_str)
                {
                    let mut path = at.clone();
                    path.extend([Seg::Key("source"), Seg::Key("data")]);
                    out.push((data.len() as u64, path));
                }
            }
            Some("input_image") => {
                if let Some(url) = o
                    .get("image_url")
                    .and_then(Value::as_str)
                    .filter(|u| u.starts_with("data:"))
                {
                    let mut path = at.clone();
                    path.push(Seg::Key("image_url"));
                    out.push((url.len() as u64, path));
                }
            }
            _ => {
                for key in ["content", "output"] {
                    if let Some(inner) = o.get(key) {
                        at.push(Seg::Key(key));
                        inline_images(inner, at, out);
                        at.pop();
                    }
                }
            }
        }
        at.pop();
    }
}

/// Longest string kept from a payload; longer ones are cut (the source keeps the full text).
pub const MAX_KEPT_STRING: usize = 512;

/// A copy of `v` with every string longer than `max` bytes cut, so that the model's memory does
/// not grow with tool outputs and file contents.
pub fn cap_strings(v: &Value, max: usize) -> Value {
    match v {
        Value::String(s) => Value::String(crate::text::capped(s, max)),
        Value::Array(items) => Value::Array(items.iter().map(|i| cap_strings(i, max)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| (k.clone(), cap_strings(i, max)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Where a second JSON value begins right after a complete first one (`{…}{…}`, two events
/// written back to back), if it does.
pub fn second_json_value(text: &str) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    let end = values.byte_offset();
    let rest = text.get(end..)?.trim_start();
    (rest.starts_with('{') || rest.starts_with('[')).then(|| text.len() - rest.len())
}

/// Cuts, in place, every string of `v` longer than `max` bytes (as [`cap_strings`] does, without
/// copying the value).
pub fn cap_strings_in_place(v: &mut Value, max: usize) {
    match v {
        Value::String(s) => crate::text::cap_in_place(s, max),
        Value::Array(items) => items.iter_mut().for_each(|i| cap_strings_in_place(i, max)),
        Value::Object(map) => map.values_mut().for_each(|i| cap_strings_in_place(i, max)),
        _ => {}
    }
}

/// The string at `key` of a JSON object, if it is one.
pub(crate) fn str_of<'a>(
    o: &'a serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Option<&'a str> {
    o.get(key).and_then(serde_json::Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn second_json_value_after_the_first() {
        assert_eq!(second_json_value(r#"{"a":1}{"b":2}"#), Some(7));
        assert_eq!(second_json_value("{\"a\":\"}{\"} \n[1]"), Some(12));
        assert_eq!(second_json_value(r#"{"a":1}"#), None);
        assert_eq!(second_json_value(r#"{"a":1"#), None);
        assert_eq!(second_json_value(r#"{"a":1} trailing"#), None);
    }

    #[test]
    fn caps_long_strings_only() {
        let v = json!({"a": "é".repeat(10), "b": [1, "short"], "c": {}});
        let capped = cap_strings(&v, 5);
        assert_eq!(capped["a"], "éé…[20 bytes]");
        assert_eq!(capped["b"], json!([1, "short"]));
        assert_eq!(capped["c"], json!({}));
        let mut in_place = v.clone();
        cap_strings_in_place(&mut in_place, 5);
        assert_eq!(in_place, capped);
    }
}
