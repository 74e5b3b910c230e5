//! Acceptance test: the Claude Code transcripts and Codex rollouts of
//! `../shared/corpus/transcripts/`, diagnosed as each scenario's README.md and the last section of
//! `../shared/corpus/EXPECTED.md` say. Without the corpus these tests are reported as ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

/// The transcript of a scenario: Claude Code's `<session-id>.jsonl`, Codex's `rollout-*.jsonl`
/// (never `requests.jsonl`, which is what the client sent).
fn transcript(client: &str, scenario: &str) -> PathBuf {
    let dir = corpus().join("transcripts").join(client).join(scenario);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.ends_with(".jsonl") && name != "requests.jsonl"
        })
        .collect();
    found.sort();
    assert_eq!(found.len(), 1, "{}: {found:?}", dir.display());
    found.remove(0)
}

struct Diagnosis {
    path: PathBuf,
    format: String,
    findings: Vec<Value>,
}

fn diagnose(client: &str, scenario: &str) -> Diagnosis {
    let path = transcript(client, scenario);
    let (code, doc) = diagnose_json(&path, &[]);
    assert!(code == 0 || code == 1, "{client}/{scenario}: exit {code}");
    Diagnosis {
        format: doc["files"][0]["format"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        findings: findings(&doc),
        path,
    }
}

fn format_of(client: &str) -> &'static str {
    if client == "codex" {
        "codex-rollout"
    } else {
        "claude-transcript"
    }
}

/// Findings at warning or error.
fn serious(f: &[Value]) -> Vec<Value> {
    f.iter()
        .filter(|x| matches!(x["severity"].as_str(), Some("warning" | "error")))
        .cloned()
        .collect()
}

const NO_CORPUS: &str = "../shared/corpus not found (set REWIND_CORPUS to its path)";

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn healthy_and_recovered_sessions_report_no_warning_or_error() {
    let _ = NO_CORPUS;
    for (client, scenario) in [
        ("claude-code", "healthy"),
        ("claude-code", "tool"),
        ("claude-code", "toolfail"),
        ("claude-code", "subagent"),
        ("claude-code", "compact"),
        ("claude-code", "stream_error"),
        ("codex", "healthy"),
        ("codex", "tool"),
        ("codex", "toolfail"),
        ("codex", "stream_error"),
        ("codex", "stream_error_after_block"),
    ] {
        let d = diagnose(client, scenario);
        assert_eq!(d.format, format_of(client), "{client}/{scenario}");
        let bad = serious(&d.findings);
        assert!(
            bad.is_empty(),
            "{client}/{scenario} must report no warning or error:\n{}",
            describe(&bad)
        );
    }
}

/// The rules about a transcript's structure report nothing, not even information, on the healthy
/// and recovered sessions (the compaction's new root, the subagent's meta file, ordinals).
#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn structure_rules_are_silent_on_healthy_sessions() {
    for (client, scenario) in [
        ("claude-code", "healthy"),
        ("claude-code", "tool"),
        ("claude-code", "toolfail"),
        ("claude-code", "subagent"),
        ("claude-code", "compact"),
        ("claude-code", "stream_error"),
        ("codex", "healthy"),
        ("codex", "tool"),
        ("codex", "toolfail"),
        ("codex", "stream_error"),
        ("codex", "stream_error_after_block"),
    ] {
        let d = diagnose(client, scenario);
        for rule in [
            "tool-result-orphaned",
            "transcript-tree-broken",
            "rollout-order-broken",
            "subagent-orphaned",
            "transcript-oversized",
        ] {
            let f = of_rule(&d.findings, rule);
            assert!(
                f.is_empty(),
                "{client}/{scenario}: {}",
                describe(&d.findings)
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn the_subagent_sidechain_is_a_healthy_transcript_too() {
    let path = corpus().join("transcripts/claude-code/subagent/subagents");
    let file = std::fs::read_dir(&path)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .unwrap();
    let (code, doc) = diagnose_json(&file, &[]);
    assert_eq!(code, 0, "{}", describe(&findings(&doc)));
    assert_eq!(doc["files"][0]["format"], "claude-transcript");
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn kill_tool_reports_the_unanswered_call() {
    for (client, call) in [
        ("claude-code", "toolu_mock_001"),
        ("codex", "call_mock_001"),
    ] {
        let d = diagnose(client, "kill_tool");
        assert_eq!(d.format, format_of(client));
        let f = of_rule(&d.findings, "tool-never-finished");
        assert_eq!(f.len(), 1, "{client}: {}", describe(&d.findings));
        assert_eq!(f[0]["severity"], "error");
        assert_eq!(span_text(&d.path, f[0]), format!("\"{call}\""));
        assert!(f[0]["message"].as_str().unwrap().contains(call));
        assert_eq!(d.findings.len(), 1, "{client}: {}", describe(&d.findings));
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn claude_code_fatal_stream_error_is_a_session_error() {
    let d = diagnose("claude-code", "stream_error_fatal");
    let f = of_rule(&d.findings, "session-error");
    assert_eq!(f.len(), 1, "{}", describe(&d.findings));
    assert_eq!(f[0]["severity"], "error");
    assert!(span_text(&d.path, f[0]).starts_with("\"API Error: 529"));
    assert!(f[0]["message"].as_str().unwrap().contains("529"));
    // The record is the client's own, and the finding says so.
    assert!(
        f[0]["notes"].to_string().contains("<synthetic>"),
        "{}",
        f[0]
    );
    assert_eq!(d.findings.len(), 1, "{}", describe(&d.findings));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn kill_stream_says_the_last_user_turn_was_never_answered() {
    for (client, prompt) in [
        ("claude-code", "\"Tell me a long story\""),
        ("codex", "\"Tell me a long story\""),
    ] {
        let d = diagnose(client, "kill_stream");
        let f = of_rule(&d.findings, "message-incomplete");
        assert_eq!(f.len(), 1, "{client}: {}", describe(&d.findings));
        assert_eq!(f[0]["severity"], "warning");
        assert!(f[0]["message"].as_str().unwrap().contains("never answered"));
        assert_eq!(span_text(&d.path, f[0]), prompt);
        assert_eq!(d.findings.len(), 1, "{client}: {}", describe(&d.findings));
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn resumed_sessions_report_at_most_a_warning_and_say_what_the_client_did() {
    // Claude Code: the orphan stays on disk as a dead-end branch; the resumed request is valid.
    let d = diagnose("claude-code", "resume_after_kill_tool");
    assert!(
        d.findings.iter().all(|f| f["severity"] != "error"),
        "{}",
        describe(&d.findings)
    );
    let f = of_rule(&d.findings, "tool-never-finished");
    assert_eq!(f.len(), 1, "{}", describe(&d.findings));
    assert_eq!(f[0]["severity"], "warning");
    assert_eq!(span_text(&d.path, f[0]), "\"toolu_mock_001\"");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("dead-end branch")
    );
    let notes = f[0]["notes"].to_string();
    assert!(notes.contains("not sent"), "{notes}");

    // Codex: two consecutive user messages, no synthetic items: an info only.
    let d = diagnose("codex", "resume_after_kill_stream");
    assert!(serious(&d.findings).is_empty(), "{}", describe(&d.findings));
    let f = of_rule(&d.findings, "message-incomplete");
    assert_eq!(f.len(), 1, "{}", describe(&d.findings));
    assert_eq!(f[0]["severity"], "info");
    assert_eq!(span_text(&d.path, f[0]), "\"Tell me a long story\"");
    assert!(
        f[0].to_string().contains("two consecutive user messages"),
        "{}",
        f[0]
    );
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn files_beside_the_transcripts_are_not_taken_for_transcripts() {
    let root = corpus().join("transcripts");
    for client in ["claude-code", "codex"] {
        for entry in std::fs::read_dir(root.join(client)).unwrap() {
            let dir = entry.unwrap().path();
            let requests = dir.join("requests.jsonl");
            if !requests.exists() {
                continue;
            }
            let out = rewind()
                .arg("diagnose")
                .arg("--format")
                .arg("json")
                .arg(&requests)
                .output()
                .unwrap();
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            let format = doc["files"][0]["format"].as_str().unwrap_or("none");
            assert!(
                !matches!(format, "claude-transcript" | "codex-rollout"),
                "{}: {format}",
                requests.display()
            );
        }
    }
}
