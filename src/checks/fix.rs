//! Rule-owned fixes: what change repairs a finding in a stored OpenCode session.
//!
//! A check that can repair what it finds implements [`Check::fix`](super::Check::fix): given
//! the finding and a [`FixContext`] (the session's stored JSON, its replayed model and the plan so
//! far), it adds [`Change`]s to the plan and says whether it could ([`Fix`]). Changes are edits of
//! the stored JSON (never a re-serialisation of the lenient model: keys keep their order, unknown
//! fields survive), each carrying a `rewind` marker that says which rule changed what.
//! `repair::plan` builds the context, asks each finding's rule, and applies nothing itself.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::Rule;
use crate::FastMap;
use crate::checks::diagnostic::Finding;
use crate::model::{REPAIR_MARKER, schema};
use crate::session::stored::StoredSession;
use crate::session::{Message, PartRecord, Session};

/// One change to a stored record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Change {
    pub session_id: String,
    pub message_id: String,
    /// The part changed or added (none for a message change).
    pub part_id: Option<String>,
    pub rule: Rule,
    /// What changes, in words.
    pub change: String,
    #[serde(skip)]
    pub edit: Edit,
}

/// The edit itself: the record's new JSON, or a part to delete.
#[derive(Clone, Debug)]
pub enum Edit {
    UpdatePart {
        data: Value,
    },
    InsertPart {
        data: Value,
    },
    UpdateMessage {
        data: Value,
    },
    /// Deletes the part's row (applied only after the backup is made and checked; the plan's
    /// words quote what is deleted).
    DeletePart,
    /// Files the session's row under another project and/or folder (`session.project_id`,
    /// `session.directory`; `None` leaves a column as it is). These are columns, not JSON: the
    /// row carries no marker, and the plan's words say what each was.
    UpdateSession {
        project_id: Option<String>,
        directory: Option<String>,
    },
}

/// Where a repair may file hidden sessions: what the user said on the command line.
#[derive(Clone, Debug, Default)]
pub struct Relink {
    /// `--project ID`: the project to file hidden sessions under, instead of the one OpenCode
    /// resolves for their folder.
    pub project: Option<String>,
    /// `--relink OLD=NEW`: folders that moved; a session whose folder is `OLD` or inside it gets
    /// the same place under `NEW`.
    pub folders: Vec<(String, String)>,
}

/// A session's plan.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SessionPlan {
    pub session_id: String,
    pub changes: Vec<Change>,
    /// Findings of fixable rules this plan cannot fix, in words.
    pub unfixable: Vec<String>,
    /// The findings the plan fixes (rule, message, part), checked after applying it.
    #[serde(skip)]
    pub fixes: BTreeSet<FindingKey>,
}

/// What identifies a finding across two diagnoses.
pub type FindingKey = (Rule, Option<String>, Option<String>, Option<String>);

/// The key of a finding.
pub fn key(f: &Finding) -> FindingKey {
    (
        f.rule,
        f.ids.message_id.clone(),
        f.ids.part_id.clone(),
        f.ids.call_id.clone(),
    )
}

/// What a rule's fix did with a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fix {
    /// Changes were planned (or another finding's changes already cover this one).
    Planned,
    /// The finding is not one this rule's fix applies to (e.g. a tool that is no longer open);
    /// nothing was planned and nothing is said.
    Skipped,
    /// The rule cannot repair this finding; the reason was added to the plan's `unfixable`.
    Unfixable,
    /// The rule has no fix at all.
    NotFixable,
}

/// What a fix reads, and the plan it adds to.
pub struct FixContext<'a> {
    pub stored: &'a StoredSession,
    /// The session as replayed from `stored`.
    pub session: &'a Session,
    /// Every finding of the session (fixes that act per message read their siblings).
    pub findings: &'a [Finding],
    /// The time written into repaired records (ms since the epoch).
    pub now: i64,
    /// The store's `project` rows (none for a store without them).
    pub projects: &'a [crate::session::Project],
    /// The folders of those rows and of the session, resolved on this machine.
    pub here: &'a crate::session::FoldersHere,
    /// Where hidden sessions may be filed.
    pub relink: &'a Relink,
    pub plan: SessionPlan,
    raw_parts: HashMap<&'a str, &'a str>,
    raw_messages: HashMap<&'a str, &'a str>,
    /// The replayed messages (their positions) and parts by id (the first of an id, as a walk
    /// finds it).
    messages: FastMap<&'a str, usize>,
    parts: FastMap<&'a str, &'a PartRecord>,
    /// The findings on each message (their indices, in order).
    on_message: FastMap<&'a str, Vec<usize>>,
    /// Parts each message has in the store (the first message of an id), and how many of them
    /// the plan so far deletes.
    stored_parts: FastMap<&'a str, usize>,
    deleted: FastMap<String, usize>,
    /// Units of work already planned, so a fix that covers several findings runs once.
    done: HashSet<(Rule, String)>,
}

impl<'a> FixContext<'a> {
    pub fn new(
        stored: &'a StoredSession,
        session: &'a Session,
        findings: &'a [Finding],
        now: i64,
        projects: &'a [crate::session::Project],
        here: &'a crate::session::FoldersHere,
        relink: &'a Relink,
    ) -> FixContext<'a> {
        let mut raw_parts = HashMap::new();
        let mut raw_messages = HashMap::new();
        for m in &stored.messages {
            if let Some(info) = &m.info {
                raw_messages.insert(m.id.as_str(), info.text.as_str());
            }
            for p in &m.parts {
                raw_parts.insert(p.id.as_str(), p.text.as_str());
            }
        }
        let stored_parts =
            crate::first_of((stored.messages.iter()).map(|m| (m.id.as_str(), m.parts.len())));
        let messages =
            crate::first_of((session.messages.iter().enumerate()).map(|(k, m)| (m.id.as_str(), k)));
        let parts = crate::first_of(
            (session.messages.iter())
                .flat_map(|m| &m.parts)
                .map(|p| (p.part.id.as_str(), p)),
        );
        let mut on_message: FastMap<&str, Vec<usize>> = FastMap::default();
        for (k, f) in findings.iter().enumerate() {
            if let Some(m) = f.ids.message_id.as_deref() {
                on_message.entry(m).or_default().push(k);
            }
        }
        FixContext {
            stored,
            session,
            findings,
            now,
            projects,
            here,
            relink,
            plan: SessionPlan {
                session_id: stored.id.clone(),
                ..SessionPlan::default()
            },
            raw_parts,
            raw_messages,
            messages,
            parts,
            on_message,
            stored_parts,
            deleted: FastMap::default(),
            done: HashSet::new(),
        }
    }

    /// The replayed message with this id ([`Session::message`] without the walk).
    pub fn message(&self, id: &str) -> Option<&'a Message> {
        let session = self.session;
        self.messages.get(id).and_then(|&k| session.messages.get(k))
    }

    /// Where the message with this id is in the session (the first of an id).
    pub fn message_position(&self, id: &str) -> Option<usize> {
        self.messages.get(id).copied()
    }

    /// The replayed part with this id, in any message ([`Session::part`] without the walk).
    pub fn part(&self, id: &str) -> Option<&'a PartRecord> {
        self.parts.get(id).copied()
    }

    /// The session's findings on message `id`, in order.
    pub fn findings_on(&self, id: &str) -> impl Iterator<Item = &'a Finding> + use<'a, '_> {
        let findings = self.findings;
        self.on_message
            .get(id)
            .into_iter()
            .flatten()
            .map(move |&k| &findings[k])
    }

    /// The stored JSON of a part.
    pub fn raw_part(&self, id: &str) -> Option<Value> {
        serde_json::from_str(self.raw_parts.get(id)?).ok()
    }

    /// The stored JSON of a message's info.
    pub fn raw_message(&self, id: &str) -> Option<Value> {
        serde_json::from_str(self.raw_messages.get(id)?).ok()
    }

    /// Whether `unit` of `rule` was planned already; marks it planned.
    pub fn once(&mut self, rule: Rule, unit: &str) -> bool {
        !self.done.insert((rule, unit.to_owned()))
    }

    /// Plans replacing the finding's part with `data` (when there is one), checked against the
    /// schema first.
    pub fn update_part(&mut self, f: &Finding, data: Option<Value>, words: String) -> Fix {
        let (Some(part_id), Some(data)) = (f.ids.part_id.clone(), data) else {
            self.unfixable(format!("{}: {}", f.rule, f.message.unescaped()));
            return Fix::Unfixable;
        };
        if !schema::validate_part(&data).is_empty() {
            self.unfixable(format!(
                "{} on part {part_id}: the part has other schema problems; fix it by hand",
                f.rule
            ));
            return Fix::Unfixable;
        }
        self.plan.fixes.insert(key(f));
        self.plan.changes.push(Change {
            session_id: self.stored.id.clone(),
            message_id: f.ids.message_id.clone().unwrap_or_default(),
            part_id: Some(part_id),
            rule: f.rule,
            change: words,
            edit: Edit::UpdatePart { data },
        });
        Fix::Planned
    }

    /// Plans replacing a message's info with `data`.
    pub fn update_message(&mut self, f: &Finding, message_id: &str, data: Value, words: String) {
        self.plan.fixes.insert(key(f));
        self.plan.changes.push(Change {
            session_id: self.stored.id.clone(),
            message_id: message_id.to_owned(),
            part_id: None,
            rule: f.rule,
            change: words,
            edit: Edit::UpdateMessage { data },
        });
    }

    /// Plans deleting the finding's part.
    pub fn delete_part(&mut self, f: &Finding, words: String) -> Fix {
        let Some(part_id) = f.ids.part_id.clone() else {
            self.unfixable(format!("{}: {}", f.rule, f.message.unescaped()));
            return Fix::Unfixable;
        };
        self.plan.fixes.insert(key(f));
        let message_id = f.ids.message_id.clone().unwrap_or_default();
        *self.deleted.entry(message_id.clone()).or_default() += 1;
        self.plan.changes.push(Change {
            session_id: self.stored.id.clone(),
            message_id,
            part_id: Some(part_id),
            rule: f.rule,
            change: words,
            edit: Edit::DeletePart,
        });
        Fix::Planned
    }

    /// The number of parts `message_id` has in the store, less those the plan so far deletes.
    pub fn parts_left(&self, message_id: &str) -> usize {
        let stored = self.stored_parts.get(message_id).copied().unwrap_or(0);
        let deleted = self.deleted.get(message_id).copied().unwrap_or(0);
        stored.saturating_sub(deleted)
    }

    /// Plans inserting a new part.
    pub fn insert_part(
        &mut self,
        rule: Rule,
        message_id: &str,
        part_id: String,
        data: Value,
        words: String,
    ) {
        self.plan.changes.push(Change {
            session_id: self.stored.id.clone(),
            message_id: message_id.to_owned(),
            part_id: Some(part_id),
            rule,
            change: words,
            edit: Edit::InsertPart { data },
        });
    }

    /// Plans filing the session's row under `project_id` and/or `directory`.
    pub fn update_session(
        &mut self,
        f: &Finding,
        project_id: Option<String>,
        directory: Option<String>,
        words: String,
    ) -> Fix {
        self.plan.fixes.insert(key(f));
        self.plan.changes.push(Change {
            session_id: self.stored.id.clone(),
            message_id: String::new(),
            part_id: None,
            rule: f.rule,
            change: words,
            edit: Edit::UpdateSession {
                project_id,
                directory,
            },
        });
        Fix::Planned
    }

    /// Records that `f` is fixed by changes planned elsewhere.
    pub fn fixed(&mut self, f: &Finding) {
        self.plan.fixes.insert(key(f));
    }

    /// Says why something cannot be fixed.
    pub fn unfixable(&mut self, words: String) {
        self.plan.unfixable.push(words);
    }
}

/// The `rewind` marker of a repaired record: which rule changed it, and what was there before.
pub fn marker(rule: Rule, original: Value) -> Value {
    json!({ "rule": rule.as_str(), "original": original })
}

/// What a finding on a record rewind repaired says about it: the marker explains a change, it
/// does not exempt the record from the checks (a repaired record that is still wrong, or that
/// another writer changed since, is reported like any other).
pub fn repair_note(metadata: Option<&Map<String, Value>>) -> Option<String> {
    let m = metadata?.get(REPAIR_MARKER)?;
    let rule = m.get("rule").and_then(Value::as_str).unwrap_or("?");
    let original = m
        .get("original")
        .filter(|o| !o.is_null())
        .map(|o| format!("; before: {}", crate::text::clip(&o.to_string())))
        .unwrap_or_default();
    Some(format!(
        "`rewind repair` changed this record (rule `{rule}`{original})"
    ))
}

/// The current time in ms since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0))
}

/// `state.time.<key>` when it is a number.
pub fn time_of(state: &Map<String, Value>, key: &str) -> Option<Value> {
    state
        .get("time")
        .and_then(|t| t.get(key))
        .filter(|x| x.is_number())
        .cloned()
}

/// Makes `state` a valid `error` state (status, error, time, an object input) and returns its
/// metadata object, created when missing, for the caller's markers.
pub fn into_error(
    state: &mut Map<String, Value>,
    error: String,
    start: Value,
    end: Value,
) -> Option<&mut Map<String, Value>> {
    state.insert("status".into(), json!("error"));
    state.insert("error".into(), json!(error));
    state.insert("time".into(), json!({ "start": start, "end": end }));
    if !state.get("input").is_some_and(Value::is_object) {
        state.insert("input".into(), json!({}));
    }
    state
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// A recovery `step-finish` (reason `error`, zero tokens and cost) written by `rule`'s fix.
pub fn recovery_finish(rule: Rule) -> Value {
    json!({
        "type": "step-finish",
        "reason": "error",
        "cost": 0,
        "tokens": { "input": 0, "output": 0, "reasoning": 0, "cache": { "read": 0, "write": 0 } },
        "metadata": { REPAIR_MARKER: marker(rule, Value::Null) },
    })
}

/// A recovery `step-start` written by `rule`'s fix.
pub fn recovery_start(rule: Rule) -> Value {
    json!({ "type": "step-start", "metadata": { REPAIR_MARKER: marker(rule, Value::Null) } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::diagnostic::{Ids, Severity};
    use crate::formats::opencode::replay::{Render, replay};
    use crate::formats::opencode::stored::{Place, StoredMessage, StoredRecord};
    use crate::source::{FileId, SourceMap};

    fn row(id: &str, text: String) -> StoredRecord {
        StoredRecord::new(id.into(), text, Place::Row)
    }

    #[test]
    fn lookups_by_id_find_what_the_walks_found() {
        // Messages of three parts each; a message id and a part id stored twice.
        let message = |m: &str, parts: &[&str]| {
            StoredMessage {
            id: m.into(),
            info: Some(row(
                m,
                r#"{"role":"user","time":{"created":1},"agent":"build","model":{"providerID":"p","modelID":"m"}}"#.into(),
            )),
            parts: parts
                .iter()
                .map(|p| row(p, format!(r#"{{"type":"text","text":"{p}"}}"#)))
                .collect(),
        }
        };
        let stored = StoredSession {
            id: "ses_1".into(),
            messages: vec![
                message("msg_1", &["prt_1a", "prt_1b", "prt_1c"]),
                message("msg_2", &["prt_2a", "prt_1b", "prt_2c"]),
                message("msg_1", &["prt_3a"]),
            ],
            ..StoredSession::default()
        };
        let mut sources = SourceMap::default();
        let analysis = replay(
            stored.clone(),
            crate::testing::formats::OPENCODE_EXPORT,
            FileId(0),
            &Render::Placeholder(FileId(0)),
            &mut sources,
        );
        let session = &analysis.sessions[0];
        let on = |m: &str, p: &str| {
            Finding::new(Rule::EmptyTextPart, Severity::Warning, "x")
                .ids(Ids::default().message(m.to_owned()).part(p.to_owned()))
        };
        let findings = vec![
            on("msg_2", "prt_2a"),
            on("msg_1", "prt_1a"),
            on("msg_2", "prt_2c"),
        ];
        let relink = Relink::default();
        let here = crate::session::FoldersHere::default();
        let mut ctx = FixContext::new(&stored, session, &findings, 0, &[], &here, &relink);
        for id in [
            "msg_1", "msg_2", "msg_3", "prt_1a", "prt_1b", "prt_2c", "prt_3a", "prt_x",
        ] {
            let same = |a: Option<&Message>, b: Option<&Message>| {
                a.map(std::ptr::from_ref) == b.map(std::ptr::from_ref)
            };
            assert!(same(ctx.message(id), session.message(id)), "{id}");
            let (a, b) = (ctx.part(id), session.part(id));
            assert_eq!(a.map(std::ptr::from_ref), b.map(std::ptr::from_ref), "{id}");
        }
        assert!(ctx.part("prt_1b").is_some());
        let on_2: Vec<_> = ctx
            .findings_on("msg_2")
            .map(|f| f.ids.part_id.clone())
            .collect();
        assert_eq!(on_2, [Some("prt_2a".into()), Some("prt_2c".into())]);
        assert_eq!(ctx.findings_on("msg_9").count(), 0);
        // Parts left: the first stored message of an id, less the deletions planned on it.
        assert_eq!((ctx.parts_left("msg_1"), ctx.parts_left("msg_9")), (3, 0));
        for f in &findings {
            ctx.delete_part(f, String::new());
        }
        assert_eq!((ctx.parts_left("msg_1"), ctx.parts_left("msg_2")), (2, 1));
    }
}
