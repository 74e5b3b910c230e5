//! Repairing a Claude Code transcript or a Codex rollout (JSON-lines files the client appends
//! to): the smallest edit that lets the client resume, with the original kept.
//!
//! What is repaired, found by this module on the records themselves:
//!
//! * a **torn last line** (no newline at the end, not JSON: the writer was cut off mid-append)
//!   is trimmed; its bytes stay in the backup;
//! * an **unanswered call at the end of the active history** (the client was killed while the
//!   tool ran) gets an error result, written the way the client writes its own: for Claude Code a
//!   `user` record with a `tool_result` block `is_error: true` whose content is the client's own
//!   `[Request interrupted by user for tool use]`, linked by `parentUuid` and
//!   `sourceToolAssistantUUID` to the `tool_use` record; for Codex a `function_call_output` (or
//!   `custom_tool_call_output`) `response_item` with the output `aborted`, which is what Codex
//!   0.169.0 sends for such a call on resume;
//! * an **orphan result** (a `tool_result` / `function_call_output` whose call is nowhere before
//!   it on the active history) is dropped: the block from its record, or the whole record when
//!   it holds nothing else (its children are linked to its parent instead).
//!
//! Lines that are fine are copied byte for byte. How a repair is applied:
//!
//! 1. read the file and plan; a dry run stops here;
//! 2. unless `--force`, refuse when the file was written to in the last 5 seconds (a client is
//!    writing it), when a process holds it open for writing (`formats::write::open_writers`: a
//!    client idle with it open would write on into the file the rename replaces), or when the
//!    transcript ends in a call written less than 10 minutes ago (the client may still be
//!    running the tool, and would append its result after ours);
//! 3. copy the file to `<file>.rewind-backup-<UTC time>.partial-<pid>`, fsync it, check it
//!    holds the same bytes, and only then give it its final name `<file>.rewind-backup-<UTC time>`;
//! 4. write the repaired content to `<file>.rewind-tmp-<pid>` in the same folder, fsync it, and
//!    diagnose it: every problem the plan fixes must be gone, no finding may appear that was
//!    not there before, and planning again must find nothing (a second run changes nothing);
//! 5. refuse if the file changed since it was read (the client wrote to it) or a process opened
//!    it for writing meanwhile; otherwise rename the temporary file over it (atomic), fsync the
//!    folder, read it back and compare.
//!
//! The partial backup and the temporary file are removed on every failure and on
//! SIGINT/SIGTERM; a failed repair removes its backup too (the file was not changed). Left by a
//! killed run, they are removed by the next repair of the file.
//!
//! `REWIND_TEST_ABORT_AT=after-backup|before-rename` makes the process abort at that point: a test
//! hook for the fault tests.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::checks::Rule;
use crate::checks::diagnostic::Finding;
use crate::core::Format;
use crate::formats::opencode::db::companion;
use crate::formats::write::{Scratch, fault, sync_dir, write_synced};

mod edit;
mod plan;

pub use edit::{
    CLAUDE_INTERRUPTED, CODEX_ABORTED, Change, Client, Plan, Problem, uuid_v4, uuid_v7,
};
pub(crate) use edit::{Edit, Line, now_iso, now_utc, obj, split, time_ms};
use plan::plan_bytes;

/// A transcript whose last call is younger than this may still be running it.
const LIVE_WINDOW_MS: i64 = 10 * 60 * 1000;
/// A file written to less than this long ago is being written: a client appends a record in
/// one write, so a torn line older than this is one whose writer died.
const WRITING_WINDOW: std::time::Duration = std::time::Duration::from_secs(5);

/// What a repair did.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub plan: Plan,
    pub backup: Option<PathBuf>,
    pub applied: bool,
    /// Bytes of the file before and after.
    pub bytes_before: u64,
    pub bytes_after: Option<u64>,
}

/// Why a repair did not happen.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptRepairError {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("{0}")]
    Diagnose(String),
    #[error(
        "the transcript ends in a call written {0} s ago: the client may still be running the tool, and would append its result after rewind's. Let it finish (or close the client) and run rewind repair again; if no client is running (it died), pass --force"
    )]
    MaybeLive(i64),
    #[error(
        "the file was written to {0} ms ago: a client is writing it. Let it finish (or close it) and run rewind repair again; if no client is running, pass --force"
    )]
    BeingWritten(u128),
    #[error(
        "the file is open for writing by {}: a client holding it open writes on into the file the repair replaces, and what it writes is lost. Close the client (or let it exit) and run rewind repair again; if it will write no more to this file, pass --force",
        writers_in_words(.0)
    )]
    OpenForWriting(Vec<crate::formats::write::Writer>),
    #[error("cannot write the backup {path}: {detail}")]
    Backup { path: PathBuf, detail: String },
    #[error("cannot write the repaired file: {0}")]
    Write(String),
    #[error("the repaired file failed its check: {0}")]
    Verify(String),
    #[error(
        "the file changed while rewind repaired it: the client is writing to it. Let it finish (or close it) and run rewind repair again"
    )]
    Changed,
    #[error("{cause}; the file was not changed and no backup was left behind")]
    NotChanged { cause: Box<TranscriptRepairError> },
}

/// The repaired bytes.
fn render(bytes: &[u8], plan: &Plan) -> Vec<u8> {
    let (lines, newline_at_end) = split(bytes);
    let trim = plan.edits.iter().any(|e| matches!(e, Edit::Trim));
    let mut replaced: HashMap<usize, &str> = HashMap::new();
    let mut dropped: HashSet<usize> = HashSet::new();
    let mut appended = Vec::new();
    for e in &plan.edits {
        match e {
            Edit::Trim => {}
            Edit::Drop(i) => {
                dropped.insert(*i);
            }
            Edit::Replace(i, s) => {
                replaced.insert(*i, s);
            }
            Edit::Append(s) => appended.push(s.as_str()),
        }
    }
    let kept = if trim {
        lines.len().saturating_sub(1)
    } else {
        lines.len()
    };
    let mut out =
        Vec::with_capacity(bytes.len() + appended.iter().map(|s| s.len() + 1).sum::<usize>());
    for (i, l) in lines[..kept].iter().enumerate() {
        if dropped.contains(&i) {
            continue;
        }
        match replaced.get(&i) {
            Some(s) => out.extend_from_slice(s.as_bytes()),
            None => out.extend_from_slice(l.raw),
        }
        let last = i + 1 == lines.len();
        if !last || newline_at_end || !appended.is_empty() {
            out.push(b'\n');
        }
    }
    for s in appended {
        out.extend_from_slice(s.as_bytes());
        out.push(b'\n');
    }
    out
}

/// The client that wrote the file, from its format.
pub fn client_of(format: Format) -> Option<Client> {
    match format {
        Format::ClaudeTranscript => Some(Client::ClaudeCode),
        Format::CodexRollout => Some(Client::Codex),
        Format::GeminiSession => Some(Client::Gemini),
        Format::CopilotSession => Some(Client::Copilot),
        _ => None,
    }
}

/// Every finding of the file at `path`, read as `format`.
fn diagnose(path: &Path, format: Format) -> Result<Vec<Finding>, TranscriptRepairError> {
    let options = crate::formats::unit::Options {
        input: Some(format),
        ..crate::formats::unit::Options::default()
    };
    let input = crate::formats::unit::Input {
        path,
        format,
        options: &options,
        forgetting: None,
    };
    let family = crate::formats::family_of(format).ok_or_else(|| {
        TranscriptRepairError::Diagnose(format!("no reader for {}", format.describe()))
    })?;
    let mut sources = crate::source::SourceMap::new();
    let mut out = Vec::new();
    family
        .analyze(&input, &mut sources, &mut |_, unit| {
            if let Some(a) = unit.primary() {
                out.extend(crate::checks::run(a, &|_| true));
            }
            Ok(())
        })
        .map_err(|e| TranscriptRepairError::Diagnose(e.to_string()))?;
    Ok(out)
}

/// Checks the diagnosis of the repaired file against the original's.
fn check_after(plan: &Plan, before: &[Finding], after: &[Finding]) -> Result<(), String> {
    let key = crate::checks::fix::key;
    let before_keys: BTreeSet<_> = before.iter().map(key).collect();
    let count = |fs: &[Finding], r: Rule| fs.iter().filter(|f| f.rule == r).count();
    let mut problems = Vec::new();
    for f in after {
        // Whatever rule reported a call the plan answers (or whose orphan result it drops) must
        // not report it again.
        let fixed_call = f
            .ids
            .call_id
            .as_ref()
            .is_some_and(|c| plan.calls.contains(c))
            && before_keys.contains(&key(f));
        if fixed_call {
            problems.push(format!(
                "still reported: [{}] {}",
                f.rule,
                f.message.unescaped()
            ));
        } else if !before_keys.contains(&key(f)) {
            problems.push(format!(
                "new after the repair: [{}] {}",
                f.rule,
                f.message.unescaped()
            ));
        }
    }
    let trimmed = plan.edits.iter().any(|e| matches!(e, Edit::Trim));
    if trimmed && count(after, Rule::UndecodableRecord) >= count(before, Rule::UndecodableRecord) {
        problems.push("the torn line is still reported".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// `<file>.rewind-backup-<UTC time>` (never an existing file).
fn backup_path(path: &Path) -> PathBuf {
    let stamp = now_utc().format("%Y%m%dT%H%M%SZ").to_string();
    let base = companion(path, &format!(".rewind-backup-{stamp}"));
    let mut p = base.clone();
    let mut n = 1;
    while p.exists() {
        p = companion(&base, &format!("-{n}"));
        n += 1;
    }
    p
}

/// Removes `<file>.rewind-backup-….partial-*` and `<file>.rewind-tmp-*` files a killed repair left.
fn remove_leftovers(path: &Path) {
    crate::formats::write::remove_next_to(path, |name, f| {
        (f.starts_with(&format!("{name}.rewind-backup-")) && f.contains(".partial-"))
            || f.starts_with(&format!("{name}.rewind-tmp-"))
    });
}

/// The file's length and modification time: what tells that a client wrote to it.
fn stamp(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.modified().ok()))
}

/// Copies `bytes` (the file at `path` as read) to a new backup next to it: written and synced
/// under a partial name, checked to read back the same, then given its final name.
fn write_backup(path: &Path, bytes: &[u8]) -> Result<PathBuf, TranscriptRepairError> {
    let backup = backup_path(path);
    let backup_err = |e: &dyn std::fmt::Display| TranscriptRepairError::NotChanged {
        cause: Box::new(TranscriptRepairError::Backup {
            path: backup.clone(),
            detail: crate::text::clip(&e.to_string()).into_owned(),
        }),
    };
    let partial = Scratch::new(companion(
        &backup,
        &format!(".partial-{}", std::process::id()),
    ));
    write_synced(&partial.path, bytes).map_err(|e| backup_err(&e))?;
    let copy = std::fs::read(&partial.path).map_err(|e| backup_err(&e))?;
    if copy != bytes {
        return Err(backup_err(&"the copy differs from the file"));
    }
    if std::fs::hard_link(&partial.path, &backup).is_err() {
        std::fs::rename(&partial.path, &backup).map_err(|e| backup_err(&e))?;
    }
    drop(partial);
    sync_dir(&backup);
    Ok(backup)
}

/// The processes of [`TranscriptRepairError::OpenForWriting`], the first few by name.
fn writers_in_words(writers: &[crate::formats::write::Writer]) -> String {
    let named: Vec<String> = writers.iter().take(3).map(ToString::to_string).collect();
    match writers.len().saturating_sub(named.len()) {
        0 => named.join(", "),
        more => format!("{} and {more} more", named.join(", ")),
    }
}

/// Refuses when a process has the file open for writing (where the platform can tell).
fn refuse_open_writers(path: &Path) -> Result<(), TranscriptRepairError> {
    match crate::formats::write::open_writers(path) {
        Some(writers) if !writers.is_empty() => Err(TranscriptRepairError::OpenForWriting(writers)),
        _ => Ok(()),
    }
}

/// Plans (and unless `dry_run`, applies) the repair of the transcript or rollout at `path`.
pub fn repair(
    path: &Path,
    format: Format,
    dry_run: bool,
    force: bool,
) -> Result<Outcome, TranscriptRepairError> {
    let not_changed = |cause| TranscriptRepairError::NotChanged {
        cause: Box::new(cause),
    };
    let client = client_of(format).ok_or_else(|| {
        not_changed(TranscriptRepairError::Diagnose(format!(
            "{} is not a client transcript",
            format.describe()
        )))
    })?;
    let read_stamp = stamp(path);
    let bytes = std::fs::read(path).map_err(|e| not_changed(TranscriptRepairError::Read(e)))?;
    // Lines ended by CR alone would be planned as one torn line: refused as the reading does.
    let head = &bytes[..bytes.len().min(64 * 1024)];
    if let Err(e) = crate::json::lines::refuse_cr_line_ends(&mut &*head) {
        return Err(not_changed(TranscriptRepairError::Diagnose(e.to_string())));
    }
    let plan = plan_bytes(&bytes, client);
    let mut outcome = Outcome {
        bytes_before: bytes.len() as u64,
        bytes_after: None,
        backup: None,
        applied: false,
        plan,
    };
    if dry_run || outcome.plan.changes.is_empty() {
        return Ok(outcome);
    }
    let written_ago = read_stamp
        .and_then(|(_, m)| m)
        .and_then(|m| SystemTime::now().duration_since(m).ok());
    if !force && written_ago.is_some_and(|d| d < WRITING_WINDOW) {
        let ms = written_ago.map_or(0, |d| d.as_millis());
        return Err(not_changed(TranscriptRepairError::BeingWritten(ms)));
    }
    // A client idle with the file open would write on into the file the rename replaces.
    if !force {
        refuse_open_writers(path).map_err(not_changed)?;
    }
    if !force && let Some(t) = outcome.plan.unanswered_at_ms {
        let age = now_utc().timestamp_millis() - t;
        if age < LIVE_WINDOW_MS {
            return Err(not_changed(TranscriptRepairError::MaybeLive(age / 1000)));
        }
    }
    remove_leftovers(path);
    let before = diagnose(path, format).map_err(not_changed)?;
    let repaired = render(&bytes, &outcome.plan);

    // The backup, before anything else is written.
    let backup = write_backup(path, &bytes)?;
    let mut backup_guard = Scratch::new(backup.clone());
    fault("after-backup");

    // The repaired content, checked before it replaces the file.
    let tmp = Scratch::new(companion(
        path,
        &format!(".rewind-tmp-{}", std::process::id()),
    ));
    write_synced(&tmp.path, &repaired)
        .map_err(|e| not_changed(TranscriptRepairError::Write(e.to_string())))?;
    let after = diagnose(&tmp.path, format).map_err(not_changed)?;
    check_after(&outcome.plan, &before, &after)
        .map_err(|e| not_changed(TranscriptRepairError::Verify(e)))?;
    let again = plan_bytes(&repaired, client);
    if !again.changes.is_empty() {
        let what: Vec<String> = again.changes.iter().map(|c| c.change.clone()).collect();
        return Err(not_changed(TranscriptRepairError::Verify(format!(
            "a second run would change it again: {}",
            what.join("; ")
        ))));
    }
    if stamp(path) != read_stamp {
        return Err(not_changed(TranscriptRepairError::Changed));
    }
    if !force {
        refuse_open_writers(path).map_err(not_changed)?;
    }
    fault("before-rename");
    std::fs::rename(&tmp.path, path)
        .map_err(|e| not_changed(TranscriptRepairError::Write(e.to_string())))?;
    sync_dir(path);
    // From here the file is the repaired one: the backup is kept whatever happens.
    backup_guard.keep = true;
    let mut tmp = tmp;
    tmp.keep = true;
    let written = std::fs::read(path).map_err(|e| {
        TranscriptRepairError::Verify(format!(
            "cannot read the repaired file back ({e}); the original is in {}",
            backup.display()
        ))
    })?;
    if written != repaired {
        return Err(TranscriptRepairError::Verify(format!(
            "the repaired file does not read back as written; the original is in {}",
            backup.display()
        )));
    }
    outcome.bytes_after = Some(written.len() as u64);
    outcome.backup = Some(backup);
    outcome.applied = true;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn claude(lines: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines {
            out.extend_from_slice(serde_json::to_string(l).unwrap_or_default().as_bytes());
            out.push(b'\n');
        }
        out
    }

    fn rec(uuid: &str, parent: Option<&str>, ty: &str, content: Value) -> Value {
        json!({"parentUuid": parent, "isSidechain": false, "type": ty,
               "message": {"role": if ty == "assistant" {"assistant"} else {"user"}, "content": content},
               "uuid": uuid, "timestamp": "2020-01-01T00:00:00.000Z", "sessionId": "s",
               "cwd": "/p", "version": "2.1.197", "userType": "external", "entrypoint": "sdk-cli", "gitBranch": "HEAD"})
    }

    /// An assistant record calling Bash as `id`.
    fn call(uuid: &str, parent: &str, id: &str) -> Value {
        rec(
            uuid,
            Some(parent),
            "assistant",
            json!([{"type": "tool_use", "id": id, "name": "Bash", "input": {}}]),
        )
    }

    /// A user record answering `id`.
    fn result(uuid: &str, parent: &str, id: &str) -> Value {
        rec(
            uuid,
            Some(parent),
            "user",
            json!([{"type": "tool_result", "tool_use_id": id, "content": "x"}]),
        )
    }

    fn lines_of(bytes: &[u8]) -> Vec<Value> {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap_or(Value::Null))
            .collect()
    }

    /// An assistant record of response `id`.
    fn said(uuid: &str, parent: &str, id: &str, content: Value) -> Value {
        let mut r = rec(uuid, Some(parent), "assistant", content);
        r["message"]["id"] = id.into();
        r
    }

    fn thought(text: &str) -> Value {
        json!([{"type": "thinking", "thinking": text, "signature": "Eq-signed"}])
    }

    #[test]
    fn a_killed_thinking_response_is_answered_not_stripped() {
        let bytes = claude(&[
            rec("u1", None, "user", json!("hi")),
            said("a1", "u1", "msg_1", thought("plan")),
            said(
                "a2",
                "a1",
                "msg_1",
                json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
            ),
        ]);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        let problems: Vec<Problem> = plan.changes.iter().map(|c| c.problem).collect();
        assert_eq!(problems, [Problem::UnansweredCall]);
    }

    /// A first turn whose response kept its signed thinking text (records `u0`, `a0`, `a0t`):
    /// the evidence that the session stored thinking texts, so an empty one was emptied.
    fn thought_with_text() -> Vec<Value> {
        vec![
            rec("u0", None, "user", json!("start")),
            said("a0", "u0", "msg_0", thought("planning the answer")),
            said(
                "a0t",
                "a0",
                "msg_0",
                json!([{"type": "text", "text": "ok"}]),
            ),
        ]
    }

    #[test]
    fn an_emptied_thinking_is_taken_out_and_its_child_relinked() {
        // An earlier response kept its thinking text: the empty one was emptied.
        let mut records = thought_with_text();
        records.extend([
            rec("u1", Some("a0t"), "user", json!("hi")),
            said("a1", "u1", "msg_1", thought("")),
            said(
                "a2",
                "a1",
                "msg_1",
                json!([{"type": "text", "text": "hello"}]),
            ),
        ]);
        let bytes = claude(&records);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        assert_eq!(plan.changes.len(), 1, "{:?}", plan.changes);
        assert_eq!(plan.changes[0].problem, Problem::ChangedThinking);
        assert_eq!(plan.changes[0].line, 5);
        let out = lines_of(&render(&bytes, &plan));
        assert_eq!(out.len(), 5);
        assert_eq!(out[4]["uuid"], "a2");
        assert_eq!(out[4]["parentUuid"], "u1");
        assert!(
            plan_bytes(&render(&bytes, &plan), Client::ClaudeCode)
                .changes
                .is_empty()
        );
    }

    #[test]
    fn thinking_in_a_mixed_record_is_removed_from_it() {
        // One record holding the whole response, its call on a dead-end branch elsewhere.
        let mut records = thought_with_text();
        records.extend([
            rec("u1", Some("a0t"), "user", json!("hi")),
            said(
                "a1",
                "u1",
                "msg_1",
                json!([{"type": "thinking", "thinking": "", "signature": "Eq-signed"},
                       {"type": "text", "text": "hello"}]),
            ),
            rec("u2", Some("a1"), "user", json!("more")),
        ]);
        let bytes = claude(&records);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        assert_eq!(plan.changes.len(), 1, "{:?}", plan.changes);
        let out = lines_of(&render(&bytes, &plan));
        assert_eq!(
            out[4]["message"]["content"],
            json!([{"type": "text", "text": "hello"}])
        );
        assert_eq!(out[4]["message"]["id"], "msg_1");
    }

    #[test]
    fn two_joined_thinking_responses_both_lose_their_thinking() {
        let bytes = claude(&[
            rec("u1", None, "user", json!("hi")),
            said("a1", "u1", "msg_1", thought("one")),
            said(
                "a2",
                "a1",
                "msg_1",
                json!([{"type": "text", "text": "first"}]),
            ),
            said("b1", "a2", "msg_2", thought("two")),
            said(
                "b2",
                "b1",
                "msg_2",
                json!([{"type": "text", "text": "second"}]),
            ),
        ]);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        let lines: Vec<u64> = plan.changes.iter().map(|c| c.line).collect();
        assert_eq!(lines, [2, 4]);
        let out = lines_of(&render(&bytes, &plan));
        let uuids: Vec<&str> = out.iter().filter_map(|r| r["uuid"].as_str()).collect();
        assert_eq!(uuids, ["u1", "a2", "b2"]);
        assert_eq!(out[2]["parentUuid"], "a2");
    }

    #[test]
    fn unchanged_and_unsigned_thinking_is_left_alone() {
        let signed = claude(&[
            rec("u1", None, "user", json!("hi")),
            said("a1", "u1", "msg_1", thought("plan")),
            said(
                "a2",
                "a1",
                "msg_1",
                json!([{"type": "text", "text": "hello"}]),
            ),
        ]);
        assert!(plan_bytes(&signed, Client::ClaudeCode).changes.is_empty());
        let unsigned = claude(&[
            rec("u1", None, "user", json!("hi")),
            said(
                "a1",
                "u1",
                "msg_1",
                json!([{"type": "thinking", "thinking": "", "signature": ""}]),
            ),
            said(
                "a2",
                "a1",
                "msg_1",
                json!([{"type": "text", "text": "hello"}]),
            ),
        ]);
        assert!(plan_bytes(&unsigned, Client::ClaudeCode).changes.is_empty());
    }

    #[test]
    fn answers_a_trailing_tool_use_once() {
        let bytes = claude(&[
            rec("u1", None, "user", json!("hi")),
            rec(
                "a1",
                Some("u1"),
                "assistant",
                json!([{"type": "text", "text": "ok"}]),
            ),
            call("a2", "a1", "t1"),
        ]);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].problem, Problem::UnansweredCall);
        let out = render(&bytes, &plan);
        assert!(
            out.starts_with(&bytes),
            "the records that are fine are kept byte for byte"
        );
        let recs = lines_of(&out);
        let last = &recs[3];
        assert_eq!(last["parentUuid"], "a2");
        assert_eq!(last["sourceToolAssistantUUID"], "a2");
        assert_eq!(last["message"]["content"][0]["tool_use_id"], "t1");
        assert_eq!(last["message"]["content"][0]["is_error"], true);
        assert_eq!(last["sessionId"], "s");
        assert!(plan_bytes(&out, Client::ClaudeCode).changes.is_empty());
    }

    #[test]
    fn trims_a_torn_last_line_only() {
        let mut bytes = claude(&[rec("u1", None, "user", json!("hi"))]);
        let whole = bytes.clone();
        bytes.extend_from_slice(br#"{"parentUuid":"u1","isSide"#);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].problem, Problem::TornLastLine);
        assert_eq!(render(&bytes, &plan), whole);
        // A whole last line without its newline is no torn line.
        let plan = plan_bytes(&whole[..whole.len() - 1], Client::ClaudeCode);
        assert!(plan.changes.is_empty());
    }

    #[test]
    fn drops_an_orphan_result_and_relinks_its_child() {
        let bytes = claude(&[
            rec("u1", None, "user", json!("hi")),
            result("r1", "u1", "gone"),
            rec(
                "a1",
                Some("r1"),
                "assistant",
                json!([{"type": "text", "text": "ok"}]),
            ),
            json!({"type": "last-prompt", "lastPrompt": "hi", "leafUuid": "a1", "sessionId": "s"}),
        ]);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        assert_eq!(plan.changes.len(), 1, "{:?}", plan.changes);
        assert_eq!(plan.changes[0].problem, Problem::OrphanResult);
        let recs = lines_of(&render(&bytes, &plan));
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1]["uuid"], "a1");
        assert_eq!(recs[1]["parentUuid"], "u1");
        // A result answering a call before it is kept.
        let ok = claude(&[
            rec("u1", None, "user", json!("hi")),
            call("a1", "u1", "t1"),
            result("r1", "a1", "t1"),
        ]);
        assert!(plan_bytes(&ok, Client::ClaudeCode).changes.is_empty());
    }

    #[test]
    fn removes_only_the_orphan_block_of_a_mixed_record() {
        let bytes = claude(&[
            rec("u1", None, "user", json!("hi")),
            call("a1", "u1", "t1"),
            rec(
                "r1",
                Some("a1"),
                "user",
                json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                {"type": "tool_result", "tool_use_id": "gone", "content": "y"}]),
            ),
        ]);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        let recs = lines_of(&render(&bytes, &plan));
        assert_eq!(
            recs[2]["message"]["content"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(recs[2]["message"]["content"][0]["tool_use_id"], "t1");
    }

    #[test]
    fn a_record_relinked_and_cleaned_keeps_both_changes() {
        let bytes = claude(&[
            rec("u1", None, "user", json!("hi")),
            call("a1", "u1", "t1"),
            result("r0", "a1", "gone"),
            rec(
                "r1",
                Some("r0"),
                "user",
                json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                {"type": "tool_result", "tool_use_id": "gone2", "content": "y"}]),
            ),
        ]);
        let plan = plan_bytes(&bytes, Client::ClaudeCode);
        let recs = lines_of(&render(&bytes, &plan));
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2]["uuid"], "r1");
        assert_eq!(recs[2]["parentUuid"], "a1");
        assert_eq!(
            recs[2]["message"]["content"].as_array().map(Vec::len),
            Some(1)
        );
        assert!(
            plan_bytes(&render(&bytes, &plan), Client::ClaudeCode)
                .changes
                .is_empty()
        );
    }

    fn codex(items: &[Value]) -> Vec<u8> {
        let mut lines = vec![
            json!({"timestamp": "2020-01-01T00:00:00.000Z", "ordinal": 0, "type": "session_meta", "payload": {"id": "th"}}),
        ];
        for (n, p) in items.iter().enumerate() {
            lines.push(json!({"timestamp": "2020-01-01T00:00:00.000Z", "ordinal": n + 1, "type": "response_item", "payload": p,
                              "metadata": {"history_sequence": n + 1, "sampled_through_sequence": 0}}));
        }
        claude(&lines)
    }

    #[test]
    fn codex_answers_a_trailing_call_and_drops_an_orphan_output() {
        let bytes = codex(&[
            json!({"type": "message", "role": "user", "content": []}),
            json!({"type": "function_call_output", "call_id": "gone", "output": "x"}),
            json!({"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}),
        ]);
        let plan = plan_bytes(&bytes, Client::Codex);
        let problems: Vec<Problem> = plan.changes.iter().map(|c| c.problem).collect();
        assert_eq!(
            problems,
            [
                Problem::OrphanResult,
                Problem::OrphanResult,
                Problem::UnansweredCall
            ]
        );
        let out = render(&bytes, &plan);
        let recs = lines_of(&out);
        assert_eq!(recs.len(), 4);
        // The ordinals stay 0, 1, 2, …: the call moved up, the output follows it.
        let ordinals: Vec<u64> = recs.iter().filter_map(|r| r["ordinal"].as_u64()).collect();
        assert_eq!(ordinals, [0, 1, 2, 3]);
        let moved = String::from_utf8_lossy(&out)
            .lines()
            .nth(2)
            .unwrap_or_default()
            .to_owned();
        let original = String::from_utf8_lossy(&bytes)
            .lines()
            .nth(3)
            .unwrap_or_default()
            .replace("\"ordinal\":3", "\"ordinal\":2");
        assert_eq!(moved, original, "only the ordinal changes");
        let last = &recs[3];
        assert_eq!(last["payload"]["type"], "function_call_output");
        assert_eq!(last["payload"]["call_id"], "c1");
        assert_eq!(last["payload"]["output"], CODEX_ABORTED);
        assert_eq!(last["metadata"]["history_sequence"], 4);
        assert!(plan_bytes(&out, Client::Codex).changes.is_empty());
    }

    #[test]
    fn codex_leaves_a_call_the_conversation_went_past() {
        let bytes = codex(&[
            json!({"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}),
            json!({"type": "message", "role": "user", "content": []}),
        ]);
        let plan = plan_bytes(&bytes, Client::Codex);
        assert!(plan.changes.is_empty());
        assert_eq!(plan.unfixable.len(), 1);
    }

    #[test]
    fn uuids_have_their_version() {
        assert_eq!(uuid_v4().as_bytes()[14], b'4');
        assert_eq!(uuid_v7().as_bytes()[14], b'7');
        assert_ne!(uuid_v4(), uuid_v4());
    }
}
