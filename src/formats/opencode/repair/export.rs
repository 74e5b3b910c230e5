//! Repairing an `opencode export` document: a repaired copy is written next to it (the original
//! is never overwritten).
//!
//! OpenCode's `import` skips messages and parts whose ids already exist, so importing the copy
//! over the broken session changes nothing: delete the session first
//! (`opencode session delete ID`), then `opencode import COPY`.
//!
//! The copy is written under a temporary name and renamed when whole (see [`write_copy`]);
//! `REWIND_TEST_ABORT_AT=before-rename` aborts the process just before the rename (a test hook).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{Edit, Options, SessionPlan, plan, verify};
use crate::checks;
use crate::checks::fix::Change;
use crate::core::Format;
use crate::formats::opencode::db::companion;
use crate::formats::opencode::export as opencode_export;
use crate::formats::opencode::replay::{Render, replay};
use crate::formats::opencode::request as rebuild;
use crate::formats::opencode::stored::StoredSession;
use crate::formats::write::{Scratch, fault, sync_dir, write_synced};
use crate::source::{FileId, SourceMap};

/// What an export repair did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Outcome {
    pub plan: SessionPlan,
    /// The repaired copy, when one was written.
    pub output: Option<PathBuf>,
}

/// `session.json` → `session.repaired.json` (then `.repaired-1.json`, …: never an existing file).
pub fn output_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let mut n = 0;
    loop {
        let name = if n == 0 {
            format!("{stem}.repaired.json")
        } else {
            format!("{stem}.repaired-{n}.json")
        };
        let p = path.with_file_name(name);
        if !p.exists() {
            return p;
        }
        n += 1;
    }
}

/// Reads the session of the export whose whole text is `text`, with the source map its
/// records' places refer to.
fn load(text: &str) -> Result<(StoredSession, FileId, SourceMap), String> {
    let mut sources = SourceMap::new();
    let file = sources.add_file(Path::new("export"));
    let stored = opencode_export::load(text, file).map_err(|e| e.to_string())?;
    Ok((stored, file, sources))
}

/// Replays and rebuilds a stored session and runs the checks on it: the findings and the
/// analysis they came from.
fn analyse(
    stored: StoredSession,
    file: FileId,
    sources: &mut SourceMap,
    options: &Options,
) -> (
    Vec<crate::checks::diagnostic::Finding>,
    crate::session::Analysis,
) {
    let version = stored.version.clone();
    let mut a = replay(
        stored,
        Format::OpencodeExport,
        file,
        &Render::Placeholder(file),
        sources,
    );
    rebuild::rebuild(&mut a, &options.rebuild_options(version.as_deref(), None));
    let findings = checks::run(&a, &|_| true);
    (findings, a)
}

/// Plans the repair of the export at `path`, and unless `dry_run` writes the repaired copy.
///
/// Each stage drops what the next does not need before that one starts (the stored session and
/// its analysis once the plan is made, the text once it is parsed, the parsed document once it
/// is written out), so the peak is the largest stage's, not their sum.
pub fn repair(path: &Path, options: &Options, dry_run: bool) -> Result<Outcome, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (plan, before) = {
        let (stored, file, mut sources) = load(&text)?;
        let (before, analysis) = analyse(stored.clone(), file, &mut sources, options);
        (plan(&stored, &analysis, &before, &options.relink), before)
    };
    if dry_run || plan.changes.is_empty() {
        return Ok(Outcome { plan, output: None });
    }
    let repaired = rewrite(text, &plan.changes)?;
    let (after, _) = {
        let (stored, file, mut sources) = load(&repaired)?;
        analyse(stored, file, &mut sources, options)
    };
    verify(&before, &after, &plan.fixes)?;
    let output = write_copy(path, repaired + "\n").map_err(|e| e.to_string())?;
    Ok(Outcome {
        plan,
        output: Some(output),
    })
}

/// Writes the repaired copy of the export at `path` next to it ([`output_path`]) and returns
/// its path. The copy is written under a temporary name (`<copy>.partial-<pid>`, removed on
/// failure and on SIGINT/SIGTERM), flushed to disk and only then renamed: a file under the
/// copy's name is always whole. Partial copies a killed repair left are removed first.
fn write_copy(path: &Path, text: String) -> std::io::Result<PathBuf> {
    remove_partial_copies(path);
    let output = output_path(path);
    let mut tmp = Scratch::new(companion(
        &output,
        &format!(".partial-{}", std::process::id()),
    ));
    write_synced(&tmp.path, text.as_bytes())?;
    fault("before-rename");
    std::fs::rename(&tmp.path, &output)?;
    tmp.keep = true;
    sync_dir(&output);
    Ok(output)
}

/// Removes `<stem>.repaired….json.partial-*` files next to the export at `path`.
fn remove_partial_copies(path: &Path) {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let prefix = format!("{}.repaired", stem.as_deref().unwrap_or("session"));
    crate::formats::write::remove_next_to(path, |_, f| {
        f.starts_with(&prefix) && f.contains(".json.partial-")
    });
}

/// The export `text` with `changes` applied, pretty-printed.
///
/// Message by message ([`Rewritten`]): only one message is parsed at a time, not the whole
/// document, which took about 14 times the text's size, and a message's changes are applied
/// together (runs of inserts merged in at once), not searched for one by one. Plans that change
/// a message's id (none of rewind's do today) go through [`apply`] on the whole parsed document,
/// as does a text that is not a JSON object (to the same error); both ways write the same bytes.
fn rewrite(text: String, changes: &[Change]) -> Result<String, String> {
    if !renames(changes)
        && let Ok(top) = serde_json::from_str::<Top>(&text)
    {
        let messages = (top.0.iter().find(|(k, _)| k == "messages"))
            .and_then(|(_, raw)| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
            .ok_or("no `messages` array")?;
        let mut by_id: crate::FastMap<&str, Vec<&Change>> = crate::FastMap::default();
        for change in changes {
            by_id.entry(&change.message_id).or_default().push(change);
        }
        let out = Rewritten {
            top: &top.0,
            messages: &messages,
            changes: RefCell::new(by_id),
        };
        return serde_json::to_string_pretty(&out).map_err(|e| e.to_string());
    }
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    drop(text);
    let messages = doc
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .ok_or("no `messages` array")?;
    apply(messages, changes);
    serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())
}

/// Whether a change gives a message another id (which moves later changes to another message).
fn renames(changes: &[Change]) -> bool {
    changes.iter().any(
        |c| matches!(&c.edit, Edit::UpdateMessage { data } if data["id"] != c.message_id.as_str()),
    )
}

/// A JSON object's members, each value left unparsed, in order; a repeated key's last value
/// takes its first place (as parsing it into a [`Value`] does).
struct Top<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Top<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Top<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Top<'de>, A::Error> {
                let mut members: Vec<(String, &'de RawValue)> = Vec::new();
                let mut at: crate::FastMap<String, usize> = crate::FastMap::default();
                while let Some((k, v)) = a.next_entry::<String, &'de RawValue>()? {
                    match at.get(&k) {
                        Some(&i) => members[i].1 = v,
                        None => {
                            at.insert(k.clone(), members.len());
                            members.push((k, v));
                        }
                    }
                }
                Ok(Top(members))
            }
        }
        d.deserialize_map(Members)
    }
}

/// An export written out with its changes: each message is parsed, changed and written in turn;
/// a message id's changes go to its first message, as [`apply`] does.
struct Rewritten<'a> {
    top: &'a [(String, &'a RawValue)],
    messages: &'a [&'a RawValue],
    changes: RefCell<crate::FastMap<&'a str, Vec<&'a Change>>>,
}

impl serde::Serialize for Rewritten<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap, SerializeSeq};
        struct Messages<'b, 'a>(&'b Rewritten<'a>);
        impl serde::Serialize for Messages<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.messages.len()))?;
                for raw in self.0.messages {
                    let mut m: Value = serde_json::from_str(raw.get()).map_err(S::Error::custom)?;
                    let mine = (m["info"]["id"].as_str())
                        .and_then(|id| self.0.changes.borrow_mut().remove(id));
                    if let Some(changes) = mine {
                        apply_to_message(&mut m, &changes);
                    }
                    seq.serialize_element(&m)?;
                }
                seq.end()
            }
        }
        let mut map = s.serialize_map(Some(self.top.len()))?;
        for (k, raw) in self.top {
            if k == "messages" {
                map.serialize_entry(k, &Messages(self))?;
            } else {
                let v: Value = serde_json::from_str(raw.get()).map_err(S::Error::custom)?;
                map.serialize_entry(k, &v)?;
            }
        }
        map.end()
    }
}

/// Applies `changes` in order to an export's messages, each to the first message of its id at
/// that point (a change of a message's id moves later changes to another message): the
/// definition [`Rewritten`] follows when no change renames a message, one search per change.
fn apply(messages: &mut [Value], changes: &[Change]) {
    for change in changes {
        if let Some(m) =
            (messages.iter_mut()).find(|m| m["info"]["id"] == change.message_id.as_str())
        {
            apply_one(m, change);
        }
    }
}

/// Applies `changes` (all of one message) to `m` in order, a run of inserts at once when
/// [`insert_sorted`] can.
fn apply_to_message(m: &mut Value, changes: &[&Change]) {
    let mut i = 0;
    while i < changes.len() {
        let run = (changes[i..].iter())
            .take_while(|c| matches!(c.edit, Edit::InsertPart { .. }))
            .count();
        if run > 1 && insert_sorted(m, &changes[i..i + run]) {
            i += run;
        } else {
            apply_one(m, changes[i]);
            i += 1;
        }
    }
}

/// The part an [`Edit::InsertPart`] adds.
fn inserted(change: &Change, data: &Value) -> Value {
    let id = change.part_id.clone().unwrap_or_default();
    let mut part =
        json!({"id": id, "sessionID": change.session_id, "messageID": change.message_id});
    if let (Some(o), Some(d)) = (part.as_object_mut(), data.as_object()) {
        o.extend(d.clone());
    }
    part
}

/// Inserts the parts of `inserts` (all [`Edit::InsertPart`]) into `m` at once, when its parts
/// all have string ids in ascending order: then inserting each before the first part of a
/// greater id, one after the other, keeps them in order, and places each after every part of an
/// id not greater than its own (those inserted before it included), which a merge does. `false`
/// (nothing done) otherwise.
fn insert_sorted(m: &mut Value, inserts: &[&Change]) -> bool {
    let Some(parts) = m["parts"].as_array_mut() else {
        return false;
    };
    let ids: Option<Vec<&str>> = parts.iter().map(|p| p["id"].as_str()).collect();
    if !ids.is_some_and(|ids| ids.windows(2).all(|w| w[0] <= w[1])) {
        return false;
    }
    let mut new: Vec<(String, Value)> = Vec::with_capacity(inserts.len());
    for change in inserts {
        let Edit::InsertPart { data } = &change.edit else {
            return false;
        };
        new.push((
            change.part_id.clone().unwrap_or_default(),
            inserted(change, data),
        ));
    }
    // Equal ids keep the order they were inserted in.
    new.sort_by(|a, b| a.0.cmp(&b.0));
    let old = std::mem::take(parts);
    parts.reserve(old.len() + new.len());
    let mut new = new.into_iter().peekable();
    for part in old {
        let id = part["id"].as_str().unwrap_or_default();
        while let Some((_, p)) = new.next_if(|(n, _)| n.as_str() < id) {
            parts.push(p);
        }
        parts.push(part);
    }
    parts.extend(new.map(|(_, p)| p));
    true
}

/// Applies one change to its message, as written.
fn apply_one(m: &mut Value, change: &Change) {
    match &change.edit {
        Edit::UpdateMessage { data } => m["info"] = data.clone(),
        Edit::UpdatePart { data } => {
            if let Some(p) = m["parts"].as_array_mut().and_then(|ps| {
                ps.iter_mut()
                    .find(|p| p["id"] == change.part_id.as_deref().unwrap_or_default())
            }) {
                *p = data.clone();
            }
        }
        Edit::DeletePart => {
            if let Some(parts) = m["parts"].as_array_mut() {
                parts.retain(|p| p["id"] != change.part_id.as_deref().unwrap_or_default());
            }
        }
        // An export has no project rows, so `session-hidden` plans nothing for it; and
        // `opencode import` files the session under the importing folder's project anyway.
        Edit::UpdateSession { .. } => {}
        Edit::InsertPart { data } => {
            let id = change.part_id.clone().unwrap_or_default();
            let part = inserted(change, data);
            if let Some(parts) = m["parts"].as_array_mut() {
                let at = parts
                    .iter()
                    .position(|p| p["id"].as_str().is_some_and(|x| x > id.as_str()))
                    .unwrap_or(parts.len());
                parts.insert(at, part);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Rule;

    fn change(message: &str, part: &str, edit: Edit) -> Change {
        Change {
            session_id: "ses_1".into(),
            message_id: message.into(),
            part_id: Some(part.into()),
            rule: Rule::StepMerged,
            change: String::new(),
            edit,
        }
    }

    #[test]
    fn changes_applied_by_message_are_applied_one_by_one() {
        // Messages of parts in id order or not, a message id written twice, inserts with ids
        // before, between, equal to and after the parts' (and to each other's), updates and
        // deletes between them: the same document either way.
        let mut next = crate::text::xorshift(0x5eed_e4a0_0000_0001);
        for round in 0..400 {
            let ids = ["m1", "m2", "m3", "m1"];
            let mut messages: Vec<Value> = (0..4)
                .map(|k| {
                    let mut parts: Vec<String> =
                        (0..next(6)).map(|_| format!("p{}", next(10))).collect();
                    if round % 3 != 0 {
                        parts.sort();
                    }
                    let parts: Vec<Value> = (parts.iter())
                        .map(|id| json!({"id": id, "text": format!("{k}{id}")}))
                        .collect();
                    json!({"info": {"id": ids[k]}, "parts": parts})
                })
                .collect();
            if round % 7 == 0
                && let Some(part) = messages[1]["parts"].get_mut(0)
            {
                *part = json!({"text": "no id"});
            }
            let changes: Vec<Change> = (0..next(12))
                .map(|n| {
                    let message = ["m1", "m2", "m3", "m4"][next(4)];
                    let part = format!("p{}", next(10));
                    let edit = match next(6) {
                        0 => Edit::UpdatePart {
                            data: json!({"id": part, "text": format!("u{n}")}),
                        },
                        1 => Edit::DeletePart,
                        2 if round % 5 == 0 => Edit::UpdateMessage {
                            data: json!({"id": message, "n": n}),
                        },
                        _ => Edit::InsertPart {
                            data: json!({"type": "step-start", "n": n}),
                        },
                    };
                    change(message, &part, edit)
                })
                .collect();
            let original = messages.clone();
            let mut expected = messages;
            apply(&mut expected, &changes);
            // Written message by message: the same bytes as the whole document changed and
            // written out, whatever the input's layout and other members.
            let doc = |messages: Vec<Value>| json!({"info": {"id": "ses", "title": "t"}, "messages": messages, "extra": [{}, []]});
            let text = if round % 2 == 0 {
                serde_json::to_string(&doc(original)).unwrap()
            } else {
                serde_json::to_string_pretty(&doc(original)).unwrap()
            };
            let want = serde_json::to_string_pretty(&doc(expected)).unwrap();
            assert_eq!(rewrite(text, &changes).unwrap(), want, "round {round}");
        }
    }

    #[test]
    fn a_repeated_member_is_written_where_parsing_the_whole_document_puts_it() {
        let text = r#"{"messages": [], "info": {"id": "s"}, "messages": [{"info": {"id": "m"}, "parts": []}]}"#;
        let part = change(
            "m",
            "p1",
            Edit::InsertPart {
                data: json!({"type": "step-start"}),
            },
        );
        let mut doc: Value = serde_json::from_str(text).unwrap();
        apply(
            doc["messages"].as_array_mut().unwrap(),
            std::slice::from_ref(&part),
        );
        let want = serde_json::to_string_pretty(&doc).unwrap();
        assert_eq!(rewrite(text.into(), &[part]).unwrap(), want);
        assert!(want.find("\"messages\"") < want.find("\"info\""));
        for bad in [r#"[1]"#, r#"{"messages": 1}"#, r#"{"info": {}}"#] {
            let err = rewrite(bad.into(), &[]).unwrap_err();
            assert_eq!(err, "no `messages` array", "{bad}");
        }
    }
}
