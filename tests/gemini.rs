//! Gemini CLI sessions (`tests/fixtures/gemini/`, whose README says which were recorded by the
//! real client and which were built): recognition, diagnosis, the rebuilt request, the repair
//! and the listing of `~/.gemini/tmp`. `scripts/gemini-roundtrip.sh` resumes repaired files with
//! the real client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    repo(&format!("tests/fixtures/gemini/{name}"))
}

fn diagnose(name: &str) -> (i32, String, Vec<Value>) {
    let (code, doc) = diagnose_json(&fixture(name), &[]);
    let format = doc["files"][0]["format"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (code, format, findings(&doc))
}

#[test]
fn healthy_sessions_of_both_dialects_report_nothing() {
    for name in [
        // Gemini CLI 0.61.0: JSON lines, a tool call, then resumed once (`$set` of messages, a
        // second metadata line, re-appended records).
        "healthy-tool.jsonl",
        "healthy-resumed.jsonl",
        // Killed while its tool ran: 0.61.0 records a call only once it completes, so the
        // file holds the reply's text and no call, and resumes cleanly.
        "killed-mid-tool.jsonl",
        // Gemini CLI 0.34.0: the legacy whole-file JSON, and its conversion by 0.61.0.
        "legacy-healthy-tool.json",
        "legacy-killed-mid-tool.json",
        "legacy-converted.jsonl",
    ] {
        let (code, format, f) = diagnose(name);
        assert_eq!(format, "gemini-session", "{name}");
        assert_eq!(code, 0, "{name}: {}", describe(&f));
        assert!(f.is_empty(), "{name}: {}", describe(&f));
    }
}

#[test]
fn each_broken_session_names_its_cause_at_its_byte() {
    // (fixture, rule, severity, line, what the span starts with)
    let cases: &[(&str, &str, &str, u64, &str)] = &[
        (
            "torn-last-line.jsonl",
            "undecodable-record",
            "warning",
            10,
            "{",
        ),
        (
            "undecodable-middle-line.jsonl",
            "undecodable-record",
            "warning",
            3,
            "\u{1}",
        ),
        (
            "unanswered-call.jsonl",
            "tool-never-finished",
            "error",
            7,
            "\"run_shell_command__run_shell_command_1795896783860_0\"",
        ),
        (
            "legacy-truncated.json",
            "undecodable-record",
            "warning",
            1,
            "{",
        ),
        ("startup-only.jsonl", "session-hidden", "info", 1, "{"),
        ("metadata-lost.jsonl", "session-hidden", "warning", 1, "{"),
    ];
    for (name, rule, severity, at_line, starts) in cases {
        let (_, format, f) = diagnose(name);
        assert_eq!(format, "gemini-session", "{name}");
        let hit = of_rule(&f, rule);
        assert_eq!(hit.len(), 1, "{name}: {}", describe(&f));
        assert_eq!(hit[0]["severity"], *severity, "{name}");
        assert_eq!(line(hit[0]), *at_line, "{name}");
        let text = span_text(&fixture(name), hit[0]);
        assert!(text.starts_with(starts), "{name}: {text:?}");
    }
}

#[test]
fn an_unanswered_call_breaks_the_next_request_as_the_client_sends_it() {
    let (code, _, f) = diagnose("unanswered-call.jsonl");
    assert_eq!(code, 1);
    let broken = of_rule(&f, "tool-use-without-result");
    assert_eq!(broken.len(), 1, "{}", describe(&f));
    assert!(broken[0]["message"].as_str().unwrap().contains(
        "Please ensure that function response turn comes immediately after a function call turn."
    ));
}

#[test]
fn a_truncated_legacy_file_is_lost_to_the_picker() {
    let (_, _, f) = diagnose("legacy-truncated.json");
    let hidden = of_rule(&f, "session-hidden");
    assert_eq!(hidden.len(), 1, "{}", describe(&f));
    assert_eq!(hidden[0]["severity"], "warning");
    assert!(hidden[0]["message"].as_str().unwrap().contains("2d8cd05d"));
}

#[test]
fn an_unknown_record_is_counted_never_reported() {
    let (code, doc) = diagnose_json(&fixture("unknown-record.jsonl"), &[]);
    assert_eq!(code, 0);
    assert!(findings(&doc).is_empty(), "{}", describe(&findings(&doc)));
    let s = doc.to_string();
    assert!(s.contains("$compaction"), "{s}");
}

fn request(name: &str) -> Value {
    let out = rewind()
        .args(["request", "--format", "json"])
        .arg(fixture(name))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn roles(doc: &Value) -> Vec<String> {
    doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_request_pairs_calls_as_gemini_cli_sends_them() {
    // The contents Gemini CLI 0.34.0 and 0.61.0 sent on resume (their context turn aside):
    // user, model with the call, user with its response, model.
    for name in ["healthy-tool.jsonl", "legacy-healthy-tool.json"] {
        let doc = request(name);
        assert_eq!(doc["provider"], "google", "{name}");
        assert_eq!(doc["client"], "gemini-cli", "{name}");
        assert_eq!(
            roles(&doc),
            ["user", "assistant", "user", "assistant"],
            "{name}"
        );
        assert!(doc["problems"].as_array().unwrap().is_empty(), "{name}");
    }
    // A history ending in a response gets the client's closing model turn.
    let doc = request("torn-last-line.jsonl");
    assert_eq!(roles(&doc), ["user", "assistant", "user", "assistant"]);
    let doc = request("unanswered-call.jsonl");
    assert_eq!(doc["problems"].as_array().unwrap().len(), 1);
}

/// A content: its role, and each part's kind and call id.
type Content = (String, Vec<(String, Option<String>)>);

/// What Gemini CLI 0.61.0 sent when it resumed a fixture (`resumed-requests.json`, recorded):
/// the rebuilt request holds the same contents, roles, part kinds and ids, once the context the
/// client adds in front and the new prompt at the end are set aside.
#[test]
fn the_request_is_what_the_real_client_sent_on_resume() {
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("resumed-requests.json")).unwrap())
            .unwrap();
    let sessions = recorded["sessions"].as_object().unwrap();
    assert_eq!(sessions.len(), 3);
    for (name, contents) in sessions {
        let mut want: Vec<Content> = Vec::new();
        for c in contents.as_array().unwrap() {
            let role = match c["role"].as_str().unwrap() {
                "model" => "assistant",
                other => other,
            };
            let parts: Vec<(String, Option<String>)> = c["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p[0] != "context")
                .map(|p| {
                    let kind = match p[0].as_str().unwrap() {
                        "functionCall" => "tool_use",
                        "functionResponse" => "tool_result",
                        "thought" => "reasoning",
                        other => other,
                    };
                    (kind.to_owned(), p[1].as_str().map(str::to_owned))
                })
                .collect();
            if !parts.is_empty() {
                want.push((role.to_owned(), parts));
            }
        }
        // The prompt the resumed client sent.
        want.pop();
        let doc = request(name);
        let got: Vec<Content> = doc["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let blocks = m["blocks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| {
                        (
                            b["type"].as_str().unwrap().to_owned(),
                            b["id"].as_str().map(str::to_owned),
                        )
                    })
                    .collect();
                (m["role"].as_str().unwrap().to_owned(), blocks)
            })
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn the_input_kind_can_be_named() {
    let (code, doc) = diagnose_json(
        &fixture("healthy-tool.jsonl"),
        &["--input", "gemini-session"],
    );
    assert_eq!(code, 0);
    assert_eq!(doc["files"][0]["format"], "gemini-session");
}

fn settle(path: &Path) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(past)
        .unwrap();
}

fn repair(path: &Path, extra: &[&str]) -> (i32, Value) {
    let out = rewind()
        .arg("repair")
        .args(extra)
        .args(["--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    )
}

#[test]
fn repair_answers_the_call_trims_the_torn_line_and_is_idempotent() {
    for (name, problem) in [
        ("unanswered-call.jsonl", "unanswered-call"),
        ("torn-last-line.jsonl", "torn-last-line"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(name);
        std::fs::copy(fixture(name), &file).unwrap();
        settle(&file);
        let original = std::fs::read(&file).unwrap();
        let (code, doc) = repair(&file, &["--dry-run"]);
        assert_eq!(code, 0, "{name}: {doc}");
        assert_eq!(doc["plan"][0]["problem"], problem, "{name}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original,
            "{name}: a dry run wrote"
        );

        let (code, doc) = repair(&file, &[]);
        assert_eq!(code, 0, "{name}: {doc}");
        assert_eq!(doc["applied"], true, "{name}");
        let backup = PathBuf::from(doc["backup"].as_str().unwrap());
        assert_eq!(std::fs::read(&backup).unwrap(), original, "{name}");
        let repaired = std::fs::read(&file).unwrap();
        // Append-only: the original lines stay byte for byte.
        let kept = if problem == "torn-last-line" {
            original.len()
                - (original.len() - original.iter().rposition(|&b| b == b'\n').unwrap() - 1)
        } else {
            original.len()
        };
        assert_eq!(&repaired[..kept], &original[..kept], "{name}");

        let (code, doc) = diagnose_json(&file, &[]);
        assert_eq!(code, 0, "{name}: {}", describe(&findings(&doc)));
        assert!(
            findings(&doc).is_empty(),
            "{name}: {}",
            describe(&findings(&doc))
        );
        let (code, doc) = repair(&file, &[]);
        assert_eq!(code, 0);
        assert_eq!(
            doc["applied"], false,
            "{name}: a second run changed it: {doc}"
        );
    }
    // The answer is Gemini CLI's own for a call it cancelled, on the message written again.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("u.jsonl");
    std::fs::copy(fixture("unanswered-call.jsonl"), &file).unwrap();
    settle(&file);
    repair(&file, &[]);
    let text = std::fs::read_to_string(&file).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["id"], "c119f017-7122-4562-b1c1-f9ff2754620d");
    assert_eq!(last["toolCalls"][0]["status"], "cancelled");
    assert_eq!(
        last["toolCalls"][0]["result"][0]["functionResponse"]["response"]["error"],
        "[Operation Cancelled] Operation cancelled."
    );
}

#[test]
fn a_legacy_file_is_left_alone_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("legacy-truncated.json");
    std::fs::copy(fixture("legacy-truncated.json"), &file).unwrap();
    settle(&file);
    let original = std::fs::read(&file).unwrap();
    let (code, doc) = repair(&file, &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc.to_string().contains("legacy"), "{doc}");
    assert_eq!(std::fs::read(&file).unwrap(), original);
    let (_, doc) = repair(&fixture("legacy-healthy-tool.json"), &["--dry-run"]);
    assert!(
        doc["unfixable"].as_array().is_none_or(|u| u.is_empty()),
        "{doc}"
    );
}

#[test]
fn sessions_lists_the_gemini_tmp_folder() {
    let home = tempfile::tempdir().unwrap();
    let chats = home.path().join(".gemini/tmp/work/chats");
    std::fs::create_dir_all(&chats).unwrap();
    for (name, as_) in [
        (
            "healthy-tool.jsonl",
            "session-2026-11-28T20-13-5048dce3.jsonl",
        ),
        (
            "legacy-healthy-tool.json",
            "session-2026-11-28T20-14-2d8cd05d.json",
        ),
        (
            "startup-only.jsonl",
            "session-2026-11-28T20-15-2e4edb7f.jsonl",
        ),
    ] {
        std::fs::copy(fixture(name), chats.join(as_)).unwrap();
    }
    // Not the picker's: another name.
    std::fs::copy(fixture("healthy-tool.jsonl"), chats.join("notes.jsonl")).unwrap();
    let out = rewind()
        .args(["sessions", "--format", "json"])
        .env("HOME", home.path())
        .env_remove("GEMINI_CLI_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("OPENCODE_DB")
        .env_remove("KILO_DB")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = doc.to_string();
    let stores = doc["stores"].as_array().unwrap();
    let gemini: Vec<&Value> = stores
        .iter()
        .filter(|s| s["kind"] == "gemini-cli-sessions")
        .collect();
    assert_eq!(gemini.len(), 1, "{s}");
    assert_eq!(gemini[0]["sessions"], 3, "{s}");
    assert_eq!(gemini[0]["findings"]["infos"], 1, "{s}");
    // One session of a transcript folder by id.
    let out = rewind()
        .args([
            "diagnose",
            "--format",
            "json",
            "--session",
            "2d8cd05d-526c-4ca3-8bb3-dc42304018cf",
        ])
        .arg(home.path().join(".gemini/tmp"))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        doc["files"][0]["format"],
        "gemini-session",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
