//! Claude Code transcripts and Codex rollouts, from small fixtures written in the formats the
//! clients write (`tests/fixtures/transcripts/`): what rewind recognises and reports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> std::path::PathBuf {
    repo(&format!("tests/fixtures/transcripts/{name}"))
}

fn diagnose(name: &str) -> (i32, String, Vec<Value>) {
    let (code, doc) = diagnose_json(&fixture(name), &[]);
    let format = doc["files"][0]["format"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (code, format, findings(&doc))
}

/// Human output with the path made relative.
fn human(name: &str) -> String {
    let out = rewind()
        .current_dir(repo(""))
        .args(["diagnose", &format!("tests/fixtures/transcripts/{name}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn healthy_transcripts_report_nothing() {
    for (name, format) in [
        ("claude-healthy-tool.jsonl", "claude-transcript"),
        ("codex-healthy-tool.jsonl", "codex-rollout"),
        // Parallel calls: each result hangs from its own call's record.
        ("claude-parallel-tools.jsonl", "claude-transcript"),
    ] {
        let (code, f, findings) = diagnose(name);
        assert_eq!(f, format, "{name}");
        assert_eq!(code, 0, "{name}: {}", describe(&findings));
    }
}

#[test]
fn an_unanswered_call_at_the_end_is_an_error() {
    for (name, call) in [
        ("claude-orphan-tool.jsonl", "toolu_fx_001"),
        ("codex-orphan-call.jsonl", "call_fx_001"),
    ] {
        let (code, _, f) = diagnose(name);
        assert_eq!(code, 1);
        assert_eq!(f.len(), 1, "{name}: {}", describe(&f));
        assert_eq!(f[0]["rule"], "tool-never-finished");
        assert_eq!(f[0]["severity"], "error");
        assert_eq!(span_text(&fixture(name), &f[0]), format!("\"{call}\""));
    }
}

#[test]
fn a_dead_end_branch_is_a_warning() {
    let (_, _, f) = diagnose("claude-resumed-dead-end.jsonl");
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "tool-never-finished");
    assert_eq!(f[0]["severity"], "warning");
    insta::assert_snapshot!(human("claude-resumed-dead-end.jsonl"));
}

#[test]
fn api_errors_and_torn_lines() {
    let (_, _, f) = diagnose("claude-api-error-torn.jsonl");
    let rules: Vec<&str> = f.iter().filter_map(|x| x["rule"].as_str()).collect();
    assert_eq!(
        rules,
        ["session-error", "undecodable-record"],
        "{}",
        describe(&f)
    );
    insta::assert_snapshot!(human("claude-api-error-torn.jsonl"));

    let (_, _, f) = diagnose("codex-task-error.jsonl");
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "session-error");
    assert!(span_text(&fixture("codex-task-error.jsonl"), &f[0]).contains("stream disconnected"));
}

#[test]
fn a_dangling_prompt_in_an_old_rollout() {
    let (_, format, f) = diagnose("codex-old-dangling.jsonl");
    assert_eq!(format, "codex-rollout");
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "message-incomplete");
    assert_eq!(f[0]["severity"], "warning");
    insta::assert_snapshot!(human("codex-old-dangling.jsonl"));
}

#[test]
fn an_orphan_result_breaks_the_rebuilt_request() {
    let (code, _, f) = diagnose("claude-orphan-result.jsonl");
    assert_eq!(code, 1);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "tool-result-orphaned");
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(
        span_text(&fixture("claude-orphan-result.jsonl"), &f[0]),
        "\"toolu_gone\""
    );
}

#[test]
fn a_compaction_that_keeps_a_result_without_its_call() {
    // Claude Code: the preserved segment starts with the result; its call is before the boundary.
    let name = "claude-compact-orphan-result.jsonl";
    let (code, _, f) = diagnose(name);
    assert_eq!(code, 1);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "tool-result-orphaned");
    assert_eq!(span_text(&fixture(name), &f[0]), "\"toolu_c1\"");
    assert!(
        f[0].to_string().contains("before the compaction"),
        "{}",
        f[0]
    );

    // Codex drops an output whose call a compaction removed: a warning about the rollout.
    let name = "codex-compacted-orphan-output.jsonl";
    let (code, _, f) = diagnose(name);
    assert_eq!(code, 0);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "tool-result-orphaned");
    assert_eq!(f[0]["severity"], "warning");
    assert_eq!(span_text(&fixture(name), &f[0]), "\"call_c1\"");
}

#[test]
fn a_turn_resumed_with_a_synthetic_reply_is_an_info() {
    let (code, _, f) = diagnose("claude-resume-synthetic.jsonl");
    assert_eq!(code, 0);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "message-incomplete");
    assert_eq!(f[0]["severity"], "info");
    assert!(f[0].to_string().contains("<synthetic>"), "{}", f[0]);
    // The prompt the client inserted (`isMeta`) is pointed at and explained too.
    assert!(f[0].to_string().contains("isMeta"), "{}", f[0]);
}

#[test]
fn a_gap_in_the_tree_and_a_rewound_branch() {
    let name = "claude-tree-gap.jsonl";
    let (code, _, f) = diagnose(name);
    assert_eq!(code, 1);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "transcript-tree-broken");
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(span_text(&fixture(name), &f[0]), "\"u2-lost\"");

    // A branch left behind the way the client branches on resume or rewind: information only.
    let (code, _, f) = diagnose("claude-rewound-branch.jsonl");
    assert_eq!(code, 0);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "transcript-tree-broken");
    assert_eq!(f[0]["severity"], "info");
    assert!(f[0].to_string().contains("after record a1"), "{}", f[0]);
}

#[test]
fn rollout_ordinals_and_header() {
    let name = "codex-ordinal-reused.jsonl";
    let (code, _, f) = diagnose(name);
    assert_eq!(code, 1);
    let rules: Vec<&str> = f.iter().filter_map(|x| x["rule"].as_str()).collect();
    assert_eq!(rules, ["rollout-order-broken"; 2], "{}", describe(&f));
    assert_eq!(span_text(&fixture(name), &f[0]), "4");
    assert!(f[1]["message"].as_str().unwrap().contains("no `ordinal`"));

    // A gap is allowed (a fork's page starts at an inherited ordinal).
    let (code, _, f) = diagnose("codex-ordinal-gap.jsonl");
    assert_eq!(code, 0, "{}", describe(&f));
    assert!(f.is_empty(), "{}", describe(&f));

    let (_, _, f) = diagnose("codex-header-late.jsonl");
    assert!(
        f.iter()
            .any(|x| x["message"].as_str().unwrap().contains("does not start")),
        "{}",
        describe(&f)
    );
}

#[test]
fn a_turn_cut_off_after_tool_output_and_an_interrupted_turn() {
    let name = "codex-cut-after-output.jsonl";
    let (_, _, f) = diagnose(name);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "message-incomplete");
    assert_eq!(f[0]["severity"], "warning");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("after tool results")
    );
    assert_eq!(span_text(&fixture(name), &f[0]), "\"call_t1\"");

    // The user interrupted the turn (`turn_aborted`): it ended on purpose.
    let (code, _, f) = diagnose("codex-interrupted.jsonl");
    assert_eq!(code, 0);
    assert!(f.is_empty(), "{}", describe(&f));
}

#[test]
fn each_oversized_image_of_one_record_is_pointed_at() {
    // Two images over the 5 MiB limit in one record, one nested in a tool result: each finding
    // points at its own image's data.
    let dir = tempfile::tempdir().unwrap();
    let big = "A".repeat(6 << 20);
    let image = |data: &str| {
        serde_json::json!({"type": "image",
                           "source": {"type": "base64", "media_type": "image/png", "data": data}})
    };
    let claude = [
        serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s",
            "message": {"role": "user", "content": [
                {"type": "text", "text": "see"}, image(&big),
                {"type": "tool_result", "tool_use_id": "t", "content": [image(&format!("{big}B"))]}]}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
            "message": {"id": "m1", "model": "claude", "content": [{"type": "text", "text": "ok"}]}}),
    ];
    let text: String = claude.iter().map(|r| format!("{r}\n")).collect();
    let path = dir.path().join("images.jsonl");
    std::fs::write(&path, &text).unwrap();
    let expected: Vec<u64> = text
        .match_indices("\"data\":")
        .map(|(at, _)| (at + "\"data\":".len()) as u64)
        .collect();
    let (_, doc) = diagnose_json(&path, &[]);
    let all = findings(&doc);
    let mut at: Vec<u64> = of_rule(&all, "transcript-oversized")
        .iter()
        .map(|f| f["span"]["offset"].as_u64().unwrap())
        .collect();
    at.sort_unstable();
    assert_eq!(at, expected, "{}", describe(&all));
}

/// Records of types rewind does not model are counted and named, never findings; their type is
/// the input's text, so it is escaped.
#[test]
fn records_rewind_does_not_model_are_counted_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("11111111-2222-4333-8444-555555555555.jsonl");
    let records = [
        r#"{"type":"file-history-snapshot","messageId":"u1","snapshot":{},"isSnapshotUpdate":false,"sessionId":"s"}"#,
        r#"{"type":"file-history-snapshot","messageId":"u1","snapshot":{},"isSnapshotUpdate":true,"sessionId":"s"}"#,
        r#"{"type":"x\u001b[2Jy","sessionId":"s"}"#,
        r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","version":"2.1.197"}"#,
        r#"{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"},"uuid":"a1","timestamp":"2026-01-01T00:00:01.000Z","sessionId":"s","version":"2.1.197"}"#,
    ];
    std::fs::write(&path, records.join("\n") + "\n").unwrap();
    let (code, doc) = diagnose_json(&path, &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(findings(&doc).is_empty(), "{doc}");
    let unmodelled = &doc["files"][0]["unmodelled_records"];
    assert_eq!(unmodelled["file-history-snapshot"], 2, "{doc}");
    assert_eq!(unmodelled["x\u{1b}[2Jy"], 1, "{doc}");
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("diagnose")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("3 records of types rewind does not model: `file-history-snapshot` ×2"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
}
