//! Acceptance test: the stream captures of `../shared/corpus/sse/`, diagnosed as
//! `../shared/corpus/EXPECTED.md` says (the `sse/` table, line by line). Without the corpus these
//! tests are reported as ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

fn capture(rel: &str) -> std::path::PathBuf {
    corpus().join("sse").join(rel)
}

fn diagnose(rel: &str) -> Vec<Value> {
    let path = capture(rel);
    let (code, doc) = diagnose_json(&path, &[]);
    assert!(code == 0 || code == 1, "{rel}: exit {code}");
    findings(&doc)
}

/// "must report: nothing; must not report: anything".
fn clean(rel: &str) {
    let f = diagnose(rel);
    assert!(f.is_empty(), "{rel} must report nothing:\n{}", describe(&f));
}

fn rules(f: &[Value]) -> Vec<&str> {
    f.iter().filter_map(|x| x["rule"].as_str()).collect()
}

const CORPUS: &str = "../shared/corpus not found (set REWIND_CORPUS to its path)";

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn healthy_captures_report_nothing() {
    let _ = CORPUS;
    for rel in [
        "openai-chat/opencode-tool-call.sse",
        "openai-responses/codex-cli-responses-fixture.sse",
        "anthropic/ai-sdk-fallback-tool-call.sse",
        "ai-sdk-chunks/openai-chat--openai-text.chunks.txt",
        "ai-sdk-chunks/openai-chat--deepseek-tool-call.chunks.txt",
        "ai-sdk-chunks/openai-chat--mistral-incremental-tool-call.chunks.txt",
        "ai-sdk-chunks/openai-responses--azure-tool-call.1.chunks.txt",
        "ai-sdk-chunks/openai-responses--openai-reasoning-encrypted-content.1.chunks.txt",
        "ai-sdk-chunks/openai-responses--openai-shell-tool.1.chunks.txt",
        "ai-sdk-chunks/anthropic--anthropic-tool-no-args.chunks.txt",
        "ai-sdk-chunks/anthropic--anthropic-clear-thinking.1.chunks.txt",
        "ai-sdk-chunks/anthropic--anthropic-programmatic-tool-calling.1.chunks.txt",
        "recordings/accepts-malformed-assistant-tool-order-with-default-patch.json",
        "recordings/native-anthropic-tool-call.json",
    ] {
        clean(rel);
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn tool_call_capture_keeps_its_arguments() {
    let path = capture("openai-chat/opencode-tool-call.sse");
    let out = rewind()
        .args(["replay", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &doc["units"][0]["runs"][0];
    assert_eq!(run["outcome"], "completed (finish: tool-calls)");
    let tools: Vec<&Value> = run["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["what"]
                .as_str()
                .unwrap_or_default()
                .starts_with("tool `lookup`")
        })
        .collect();
    assert_eq!(tools.len(), 1, "one tool call `lookup`");
    assert!(
        tools[0]["detail"]
            .to_string()
            .contains("awaiting execution")
    );
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn malformed_chunk_is_a_schema_violation_not_a_truncation() {
    let f = diagnose("openai-chat/opencode-malformed.sse");
    let v = of_rule(&f, "schema-violation");
    assert_eq!(v.len(), 1, "{}", describe(&f));
    let msg = v[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("`choices[0].delta.content` is the number 123, expected a string"),
        "{msg}"
    );
    assert_eq!(
        span_text(&capture("openai-chat/opencode-malformed.sse"), v[0]),
        "123"
    );
    assert!(
        of_rule(&f, "stream-truncated").is_empty(),
        "no truncation: {}",
        describe(&f)
    );
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn openai_error_is_a_provider_error_without_corruption_findings() {
    let f = diagnose("ai-sdk-chunks/openai-responses--openai-error.1.chunks.txt");
    let e = of_rule(&f, "stream-provider-error");
    assert_eq!(e.len(), 1, "{}", describe(&f));
    assert!(
        e[0]["message"]
            .as_str()
            .unwrap()
            .contains("insufficient_quota")
    );
    assert_eq!(line(e[0]), 3, "the `error` event");
    assert!(
        e[0]["related"].to_string().contains("reported again"),
        "then response.failed"
    );
    for rule in [
        "sse-invalid-json",
        "sse-concatenated-events",
        "stream-truncated",
        "stream-out-of-order",
        "schema-violation",
    ] {
        assert!(
            of_rule(&f, rule).is_empty(),
            "no corruption finding: {}",
            describe(&f)
        );
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn parallel_wrapper_skips_bad_lines_and_rebuilds_the_call() {
    let rel = "ai-sdk-chunks/openai-responses--parallel-tool-call-wrapper.1.chunks.txt";
    let f = diagnose(rel);
    let mut lines: Vec<u64> = of_rule(&f, "sse-invalid-json")
        .iter()
        .map(|x| line(x))
        .collect();
    lines.sort_unstable();
    assert_eq!(lines, [1, 6], "{}", describe(&f));
    assert!(
        of_rule(&f, "stream-error-fatal").is_empty(),
        "skip-and-continue: {}",
        describe(&f)
    );
    let out = rewind()
        .args(["replay", "--format", "json"])
        .arg(capture(rel))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let timeline = doc["units"][0]["runs"][0]["timeline"].to_string();
    assert!(
        timeline.contains("call_parallel"),
        "the function call is rebuilt: {timeline}"
    );
    assert!(timeline.contains("skipped"));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn duplicate_message_start_is_out_of_order() {
    let f = diagnose("ai-sdk-chunks/anthropic--duplicate-message-start.chunks.txt");
    let o = of_rule(&f, "stream-out-of-order");
    assert_eq!(o.len(), 1, "{}", describe(&f));
    assert_eq!(line(o[0]), 2);
    assert!(o[0]["message"].as_str().unwrap().contains("message_start"));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn spliced_message_start_leaves_the_first_tool_unfinished() {
    let f = diagnose("ai-sdk-chunks/anthropic--spliced-message-start.chunks.txt");
    let o = of_rule(&f, "stream-out-of-order");
    assert_eq!(o.len(), 1, "{}", describe(&f));
    let msg = o[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("msg_second") && msg.contains("toolu_first"),
        "{msg}"
    );
    assert_eq!(line(o[0]), 8);
    let t = of_rule(&f, "tool-never-finished");
    assert_eq!(t.len(), 1, "{}", describe(&f));
    assert_eq!(t[0]["call_id"], "toolu_first");
    assert!(
        t[0]["message"]
            .as_str()
            .unwrap()
            .contains("input never completed")
    );
    assert!(
        of_rule(&f, "stream-truncated").is_empty(),
        "it ends with message_stop"
    );
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn rejected_request_quotes_the_confirmed_400() {
    let rel = "recordings/rejects-malformed-assistant-tool-order-without-patch.json";
    let f = diagnose(rel);
    assert_eq!(rules(&f), ["tool-use-without-result"], "{}", describe(&f));
    let msg = f[0]["message"].as_str().unwrap();
    assert!(msg.contains("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: call_1"), "{msg}");
    assert!(
        span_text(&capture(rel), &f[0]).starts_with(r#"{\"type\":\"text\""#),
        "at the text block after the tool_use"
    );
    let related = f[0]["related"].to_string();
    assert!(
        related.contains("the recorded response confirms it: HTTP 400"),
        "{related}"
    );
}
