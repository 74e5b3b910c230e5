//! CI transcripts: what `claude-code-action` keeps of a run (`claude-execution-output.json`, the
//! run's Claude Code `stream-json` messages as one JSON array, pretty-printed or compact; see
//! `tests/fixtures/ci/README.md`). `rewind check` recognises them, so a workflow can gate on
//! them, and points at the bytes of the element that broke.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

#[test]
fn a_killed_run_fails_the_gate_at_the_unanswered_call() {
    for name in ["kill-tool", "kill-tool-compact"] {
        let path = repo(&format!(
            "tests/fixtures/ci/{name}/claude-execution-output.json"
        ));
        let (code, doc) = diagnose_json(&path, &[]);
        assert_eq!(code, 1, "{name}");
        assert_eq!(doc["files"][0]["format"], "agent-log", "{name}: {doc}");
        let all = findings(&doc);
        let never = of_rule(&all, "tool-never-finished");
        assert_eq!(never.len(), 1, "{name}: {}", describe(&all));
        assert_eq!(all.len(), 1, "{name}: {}", describe(&all));
        assert_eq!(span_text(&path, never[0]), "\"toolu_mock_001\"", "{name}");
        // The advice names the session's own file, not an OpenCode store.
        let help = never[0]["help"].as_str().unwrap_or_default();
        assert!(help.contains("a Claude Code transcript"), "{help}");
        assert!(!help.contains("OpenCode"), "{help}");
    }
}

#[test]
fn a_healthy_run_passes_the_gate() {
    let dir = repo("tests/fixtures/ci/healthy-tool");
    let out = rewind().arg("check").arg(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("1 file checked, 1 session: no findings"),
        "{text}"
    );
}

#[test]
fn check_over_the_artifacts_folder_reads_every_run() {
    let out = rewind()
        .args(["check", "--format", "json"])
        .arg(repo("tests/fixtures/ci"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = doc["files"].as_array().cloned().unwrap_or_default();
    let read: Vec<_> = files
        .iter()
        .filter(|f| f["format"] == "agent-log")
        .collect();
    assert_eq!(read.len(), 3, "{doc}");
    assert_eq!(findings(&doc).len(), 2, "{}", describe(&findings(&doc)));
}
