//! GitHub Copilot CLI sessions (`events.jsonl`): recognition, diagnosis of each reported kind of
//! damage at its byte, the rebuilt request, repair (byte-identical to the healthy recording it
//! was damaged from), and `rewind sessions` finding them under `~/.copilot/session-state`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{diagnose_json, findings, of_rule, repo, rewind, span_text};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    repo(&format!("tests/fixtures/copilot/{name}.jsonl"))
}

/// A copy of a fixture in a fresh folder.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("events.jsonl");
    std::fs::copy(fixture(name), &path).expect("copy");
    (dir, path)
}

/// The file's bytes from a finding's span on (60 at most).
fn from_span(path: &Path, f: &Value) -> String {
    let bytes = std::fs::read(path).expect("read");
    let off = f["span"]["offset"].as_u64().unwrap_or(0) as usize;
    String::from_utf8_lossy(&bytes[off..(off + 60).min(bytes.len())]).into_owned()
}

fn rules(doc: &Value) -> Vec<String> {
    findings(doc)
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn healthy_sessions_have_no_findings() {
    // Recorded by the real client, and the damage the client reads as intended (a U+2028 inside
    // a string; an event type newer than the schema).
    for name in [
        "healthy-text",
        "healthy-tool",
        "resumed-after-kill",
        "u2028-in-string",
        "newer-event-type",
    ] {
        let (code, doc) = diagnose_json(&fixture(name), &[]);
        assert_eq!(code, 0, "{name}: {doc}");
        assert!(findings(&doc).is_empty(), "{name}: {:?}", rules(&doc));
        assert_eq!(doc["files"][0]["format"], "copilot-session", "{name}");
    }
}

#[test]
fn a_newer_event_type_is_noted_as_not_checked() {
    let out = rewind()
        .env("COLUMNS", "240")
        .args(["diagnose"])
        .arg(fixture("newer-event-type"))
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("session.future_thing (not in Copilot CLI 1.0.102's schema: not checked)"),
        "{text}"
    );
}

#[test]
fn each_kind_of_damage_is_named_at_its_byte() {
    // (fixture, line, what the message says, what the span starts with)
    let cases = [
        (
            "nul-tail",
            15,
            "64 NUL bytes where an event should be",
            "\0",
        ),
        (
            "nul-before-event",
            8,
            "40 NUL bytes before this `tool.execution_complete` event",
            "\0",
        ),
        (
            "raw-newline",
            8,
            "a raw line break inside a string split this `tool.execution_complete` event across 2 lines",
            // The raw line break itself.
            "\n",
        ),
        (
            "concatenated",
            8,
            "2 events written on one line (`tool.execution_complete`, `assistant.turn_end`)",
            // Where the second event starts.
            "{\"type\":\"assistant.turn_end\"",
        ),
        (
            "torn-last-line",
            14,
            "the input ends inside this record",
            "{\"type\":\"session.shutdown\"",
        ),
    ];
    for (name, line, words, starts) in cases {
        let path = fixture(name);
        let (code, doc) = diagnose_json(&path, &[]);
        let all = findings(&doc);
        let bad = of_rule(&all, "undecodable-record");
        assert_eq!(bad.len(), 1, "{name}: {:?}", rules(&doc));
        let f = bad[0];
        assert_eq!(f["severity"], "warning", "{name}");
        assert_eq!(common::line(f), line, "{name}");
        assert!(
            f["message"].as_str().unwrap_or_default().contains(words),
            "{name}: {}",
            f["message"]
        );
        assert!(span_text(&path, f).starts_with(&starts[..1]), "{name}");
        assert!(from_span(&path, f).starts_with(starts), "{name}");
        // A warning is not an error: `diagnose` fails only on errors by default.
        assert_eq!(code, 0, "{name}");
    }
}

#[test]
fn a_result_lost_in_a_damaged_line_strands_its_call() {
    for name in ["raw-newline", "concatenated", "nul-before-event"] {
        let (_, doc) = diagnose_json(&fixture(name), &[]);
        let all = findings(&doc);
        let stranded = of_rule(&all, "tool-never-finished");
        assert_eq!(stranded.len(), 1, "{name}: {:?}", rules(&doc));
        let f = stranded[0];
        assert_eq!(f["call_id"], "toolu_mock_001");
        assert_eq!(f["related"][0]["line"], 8, "{name}: {f}");
        let notes = f["notes"].to_string();
        assert!(
            notes.contains("The execution of this tool, or a previous tool was interrupted."),
            "{notes}"
        );
    }
}

#[test]
fn a_call_the_client_was_killed_in_is_an_error() {
    let (code, doc) = diagnose_json(&fixture("killed-tool"), &[]);
    assert_eq!(code, 1);
    let all = findings(&doc);
    let open = of_rule(&all, "tool-never-finished");
    assert_eq!(open.len(), 1, "{:?}", rules(&doc));
    assert_eq!(open[0]["severity"], "error");
    assert_eq!(open[0]["call_id"], "toolu_mock_001");
    assert!(open[0]["notes"].to_string().contains("code `interrupted`"));
}

#[test]
fn input_copilot_session_is_accepted_and_others_are_not_taken_for_it() {
    rewind()
        .args(["diagnose", "--input", "copilot-session"])
        .arg(fixture("healthy-tool"))
        .assert()
        .success();
    for other in [
        "tests/fixtures/transcripts/claude-tool/session.jsonl",
        "tests/fixtures/transcripts/codex-tool/rollout.jsonl",
    ] {
        let path = repo(other);
        if !path.exists() {
            continue;
        }
        let (_, doc) = diagnose_json(&path, &[]);
        assert_ne!(doc["files"][0]["format"], "copilot-session", "{other}");
    }
}

/// The messages of `rewind request --format json` as (role, block kinds).
fn request(path: &Path) -> Vec<(String, Vec<String>)> {
    let out = rewind()
        .args(["request", "--format", "json"])
        .arg(path)
        .output()
        .expect("run");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let messages = doc["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .map(|m| {
            let kinds = m["blocks"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|b| b["type"].as_str().unwrap_or("?").to_owned())
                .collect();
            (m["role"].as_str().unwrap_or("?").to_owned(), kinds)
        })
        .collect()
}

#[test]
fn the_next_request_pairs_every_call_as_the_client_does() {
    // What Copilot CLI 1.0.102 sent on resume (recorded): the call, then its result (written by
    // the resume for the killed call, synthetic for one whose result line it dropped).
    for name in [
        "healthy-tool",
        "killed-tool",
        "raw-newline",
        "resumed-after-kill",
    ] {
        let msgs = request(&fixture(name));
        let call = msgs
            .iter()
            .position(|(_, k)| k.iter().any(|k| k == "tool_use"))
            .unwrap_or_else(|| panic!("{name}: no call in {msgs:?}"));
        assert_eq!(msgs[call + 1].1, vec!["tool_result"], "{name}: {msgs:?}");
        assert!(msgs.iter().all(|(r, _)| r != "system"), "{name}: {msgs:?}");
    }
}

/// Runs `rewind repair` with `args` on `path`, returning the JSON document.
fn repair(path: &Path, args: &[&str]) -> (i32, Value) {
    let out = rewind()
        .args(["repair", "--format", "json"])
        .args(args)
        .arg(path)
        .output()
        .expect("run");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if doc.is_null() {
        return (
            out.status.code().unwrap_or(-1),
            Value::String(String::from_utf8_lossy(&out.stderr).into_owned()),
        );
    }
    (out.status.code().unwrap_or(-1), doc)
}

#[test]
fn repair_restores_the_recorded_session_byte_for_byte() {
    let healthy = std::fs::read(fixture("healthy-tool")).expect("read");
    for (name, problem) in [
        ("nul-tail", "nul-bytes"),
        ("nul-before-event", "nul-bytes"),
        ("raw-newline", "split-record"),
        ("concatenated", "concatenated-records"),
    ] {
        let (dir, path) = copy(name);
        let before = std::fs::read(&path).expect("read");
        // A dry run plans and writes nothing.
        let (code, doc) = repair(&path, &["--dry-run"]);
        assert_eq!(code, 0, "{name}: {doc}");
        assert_eq!(doc["plan"][0]["problem"], problem, "{name}: {doc}");
        assert_eq!(std::fs::read(&path).expect("read"), before);
        // The copy was just written: a client may be writing it.
        let (code, doc) = repair(&path, &[]);
        assert_eq!(code, 2, "{name}: {doc}");
        assert!(doc.to_string().contains("a client is writing it"), "{doc}");
        let (code, doc) = repair(&path, &["--force"]);
        assert_eq!(code, 0, "{name}: {doc}");
        assert_eq!(doc["applied"], true);
        assert_eq!(std::fs::read(&path).expect("read"), healthy, "{name}");
        let backup = PathBuf::from(doc["backup"].as_str().unwrap_or_default());
        assert_eq!(std::fs::read(&backup).expect("backup"), before, "{name}");
        // A second run has nothing to do.
        let (_, doc) = repair(&path, &["--force"]);
        assert!(doc["plan"].as_array().is_some_and(Vec::is_empty), "{doc}");
        drop(dir);
    }
}

#[test]
fn repair_trims_a_torn_line_and_answers_a_killed_call_as_the_client_does() {
    let (_dir, path) = copy("torn-last-line");
    let (code, doc) = repair(&path, &["--force"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["plan"][0]["problem"], "torn-last-line");
    let (_, after) = diagnose_json(&path, &[]);
    assert!(findings(&after).is_empty(), "{after}");

    let (_dir, path) = copy("killed-tool");
    let (code, doc) = repair(&path, &["--force"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["plan"][0]["problem"], "unanswered-call");
    let text = std::fs::read_to_string(&path).expect("read");
    let last: Value = serde_json::from_str(text.lines().last().unwrap_or_default()).expect("json");
    // The shape Copilot CLI 1.0.102 writes for a call it finds unanswered on resume.
    assert_eq!(last["type"], "tool.execution_complete");
    assert_eq!(last["data"]["toolCallId"], "toolu_mock_001");
    assert_eq!(last["data"]["model"], "resumed");
    assert_eq!(last["data"]["interactionId"], "resume");
    assert_eq!(last["data"]["success"], false);
    assert_eq!(last["data"]["error"]["code"], "interrupted");
    let resumed = std::fs::read_to_string(fixture("resumed-after-kill")).expect("read");
    let client: Value = resumed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "tool.execution_complete")
        .expect("the client's own record");
    assert_eq!(last["data"]["error"], client["data"]["error"]);
    let previous: Value =
        serde_json::from_str(text.lines().rev().nth(1).unwrap_or_default()).expect("json");
    assert_eq!(last["parentId"], previous["id"]);
    let (code, after) = diagnose_json(&path, &[]);
    assert_eq!(code, 0);
    assert!(findings(&after).is_empty(), "{after}");
}

#[test]
fn sessions_finds_copilot_sessions_under_home() {
    let home = tempfile::tempdir().expect("tempdir");
    for (id, name) in [
        ("60e9647d-3b52-43f3-9554-d39c2e87658a", "healthy-tool"),
        ("acf5365e-6f48-43c5-96f8-3892437b6690", "killed-tool"),
    ] {
        let dir = home.path().join(".copilot/session-state").join(id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::copy(fixture(name), dir.join("events.jsonl")).expect("copy");
    }
    let out = rewind()
        .env("HOME", home.path())
        .env_remove("COPILOT_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("OPENCODE_DB")
        .env_remove("KILO_DB")
        .args(["sessions", "--format", "json"])
        .output()
        .expect("run");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    let stores = doc["stores"].as_array().cloned().unwrap_or_default();
    let copilot: Vec<&Value> = stores
        .iter()
        .filter(|s| s.to_string().contains("copilot-sessions"))
        .collect();
    assert_eq!(copilot.len(), 1, "{doc}");
    assert_eq!(copilot[0]["sessions"], 2, "{doc}");
    assert_eq!(
        copilot[0]["list"].as_array().map(Vec::len),
        Some(2),
        "{doc}"
    );
    // `--session ID` on the folder finds the session's file.
    let root = home.path().join(".copilot/session-state");
    let (code, doc) = diagnose_json(
        &root,
        &["--session", "acf5365e-6f48-43c5-96f8-3892437b6690"],
    );
    assert_eq!(code, 1, "{doc}");
    assert_eq!(rules(&doc), vec!["tool-never-finished"]);
}
