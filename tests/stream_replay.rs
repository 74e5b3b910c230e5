//! The binary on stream captures: `replay` (timeline, `--compare`, JSON), `diagnose` on the
//! samples (snapshots of the rendered diagnostics), a fixture that triggers each stream check and
//! healthy ones that must not, and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> std::path::PathBuf {
    repo("tests/fixtures/stream").join(name)
}

fn human(args: &[&str]) -> String {
    let out = rewind().args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Paths are shown as given; keep snapshots independent of the checkout's location.
    text.replace(env!("CARGO_MANIFEST_DIR"), "[repo]")
}

fn json_of(args: &[&str]) -> (i32, Value) {
    let out = rewind().args(args).output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON: {e}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

const SAMPLE_169: &str = "samples/sse-concatenated-chunk.sse";

#[test]
fn compare_shows_opencode_failing_and_the_fixed_processor_completing() {
    let text = human(&[
        "replay",
        SAMPLE_169,
        "--compare",
        "opencode",
        "opencode-fixed",
    ]);
    let outcome = text
        .lines()
        .find(|l| l.contains("outcome"))
        .unwrap_or_default();
    assert!(outcome.contains("failed at event 4"), "{text}");
    assert!(outcome.contains("completed (finish: tool-calls)"), "{text}");
    assert!(text.contains("stream-error-fatal"), "{text}");
    assert!(text.contains("skipped"), "{text}");
    let fixed = text
        .split("under opencode-fixed:")
        .nth(1)
        .unwrap_or_default();
    assert!(
        fixed.contains("sse-concatenated-events") && !fixed.contains("stream-error-fatal"),
        "{text}"
    );
}

#[test]
fn compare_in_json() {
    let (_, doc) = json_of(&[
        "replay",
        SAMPLE_169,
        "--compare",
        "opencode",
        "opencode-fixed",
        "--format",
        "json",
    ]);
    let runs = doc["units"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["profile"], "opencode");
    assert_eq!(runs[0]["failed"], true);
    assert_eq!(runs[1]["profile"], "opencode-fixed");
    assert_eq!(runs[1]["failed"], false);
    let rules = |r: &Value| -> Vec<String> {
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(rules(&runs[0]).contains(&"stream-error-fatal".to_owned()));
    assert_eq!(rules(&runs[1]), ["sse-concatenated-events"]);
    let diffs = doc["units"][0]["differences"].to_string();
    assert!(
        diffs.contains("Tool execution aborted") && diffs.contains("awaiting execution"),
        "{diffs}"
    );
}

#[test]
fn diagnose_reports_what_opencode_would_have_done() {
    let (code, doc) = diagnose_json(&repo(SAMPLE_169), &[]);
    assert_eq!(code, 1);
    let f = findings(&doc);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "sse-concatenated-events");
    assert_eq!(span_text(&repo(SAMPLE_169), &f[0]), "data:");
    let notes = f[0]["notes"].to_string();
    assert!(
        notes.contains("under `opencode` this event ends the session"),
        "{notes}"
    );
}

#[test]
fn replay_timeline_and_json() {
    let text = human(&["replay", SAMPLE_169]);
    assert!(text.contains("tool `read` call_read_0"), "{text}");
    assert!(
        text.contains("pending (event 3) → running (event 8)"),
        "{text}"
    );
    assert!(
        text.contains("outcome: completed (finish: tool-calls)"),
        "{text}"
    );
    let (_, doc) = json_of(&[
        "replay",
        SAMPLE_169,
        "--format",
        "json",
        "--processor",
        "opencode",
    ]);
    let run = &doc["units"][0]["runs"][0];
    assert_eq!(run["profile"], "opencode");
    assert_eq!(run["failed"], true);
    assert!(
        run["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["what"] == "cleanup")
    );
}

#[test]
fn tanstack_718_under_both_profiles() {
    let s = "samples/tanstack-tool-error.sse";
    let (_, pre) = diagnose_json(&repo(s), &["--processor", "tanstack-pre-727"]);
    let f = findings(&pre);
    assert_eq!(
        of_rule(&f, "tool-error-dropped").len(),
        1,
        "{}",
        describe(&f)
    );
    assert!(f[0]["related"].to_string().contains("input-complete"));
    let (_, post) = diagnose_json(&repo(s), &["--processor", "tanstack"]);
    assert!(findings(&post).is_empty(), "{}", describe(&findings(&post)));
}

#[test]
fn each_stream_check_has_a_trigger() {
    for (file, rule) in [
        ("invalid-json.sse", "sse-invalid-json"),
        ("truncated.sse", "stream-truncated"),
        ("out-of-order.sse", "stream-out-of-order"),
        ("provider-error.sse", "stream-provider-error"),
    ] {
        let (_, doc) = diagnose_json(&fixture(file), &[]);
        let f = findings(&doc);
        assert_eq!(of_rule(&f, rule).len(), 1, "{file}: {}", describe(&f));
    }
    let (_, doc) = diagnose_json(&repo("samples/har-streaming-response.har"), &[]);
    let f = findings(&doc);
    let t = of_rule(&f, "stream-truncated");
    assert_eq!(t.len(), 1, "{}", describe(&f));
    // A span inside the HAR's JSON string still points at the event's bytes in the file.
    assert!(
        span_text(&repo("samples/har-streaming-response.har"), t[0])
            .starts_with("event: content_block_delta")
    );
}

#[test]
fn healthy_streams_trigger_nothing() {
    for file in ["healthy-chat.sse", "healthy-anthropic.sse"] {
        let (code, doc) = diagnose_json(&fixture(file), &[]);
        assert_eq!(code, 0, "{file}");
        assert!(
            findings(&doc).is_empty(),
            "{file}: {}",
            describe(&findings(&doc))
        );
    }
}

#[test]
fn bad_input_is_one_error_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.sse");
    std::fs::write(&p, b"data: {\"a\":1}\n\ndata: \xff\xfe\n\n").unwrap();
    let out = rewind().arg("replay").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("UTF-8") && err.contains("byte 21"), "{err}");
    let out = rewind()
        .args(["diagnose", "--input", "sse"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let rec = dir.path().join("cut.json");
    std::fs::write(
        &rec,
        br#"{"version":1,"interactions":[{"request":{"body":"x"#,
    )
    .unwrap();
    let out = rewind()
        .args(["diagnose", "--input", "http-recording"])
        .arg(&rec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ends inside this string"));
}

#[test]
fn snapshots_of_the_samples() {
    insta::assert_snapshot!("diagnose-169", human(&["diagnose", SAMPLE_169]));
    insta::assert_snapshot!(
        "compare-169",
        human(&[
            "replay",
            SAMPLE_169,
            "--compare",
            "opencode",
            "opencode-fixed"
        ])
    );
    insta::assert_snapshot!(
        "diagnose-tanstack-pre-727",
        human(&[
            "diagnose",
            "samples/tanstack-tool-error.sse",
            "--processor",
            "tanstack-pre-727"
        ])
    );
    insta::assert_snapshot!(
        "diagnose-har",
        human(&["diagnose", "samples/har-streaming-response.har"])
    );
}

#[test]
fn agent_log_body_preview_is_replayed_and_its_cut_is_said() {
    let log = repo("tests/fixtures/agent-log-body-preview.log");
    let (code, doc) = diagnose_json(&log, &[]);
    assert_eq!(code, 0);
    let f = findings(&doc);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "stream-truncated");
    assert_eq!(f[0]["severity"], "info");
    assert!(f[0]["message"].as_str().unwrap().contains("of 48213"));
    assert!(span_text(&log, &f[0]).starts_with("... [truncated, total 48213 chars]"));
    let sessions = doc["files"][0]["sessions"].to_string();
    assert!(sessions.contains("http-stream-1"), "{sessions}");
}

/// `step-merged` is about OpenCode's step parts: a TanStack run where the answer follows a server
/// tool in the same run is healthy under both TanStack profiles; replayed as OpenCode would store
/// it (one step, text after the tool), the rule still applies.
#[test]
fn step_merged_does_not_apply_under_tanstack_profiles() {
    let file = fixture("tanstack-tool-then-text.sse");
    for profile in ["tanstack", "tanstack-pre-727"] {
        let (code, doc) = diagnose_json(&file, &["--processor", profile]);
        assert_eq!(code, 0, "{profile}");
        assert!(
            findings(&doc).is_empty(),
            "{profile}: {}",
            describe(&findings(&doc))
        );
    }
    let (_, doc) = diagnose_json(&file, &["--processor", "opencode"]);
    let f = findings(&doc);
    assert_eq!(of_rule(&f, "step-merged").len(), 1, "{}", describe(&f));
}

/// Tools the provider executes (Anthropic web search, MCP, code execution) arrive with their
/// results in the same message, and the answer follows them: no step was merged, no tool is left
/// unanswered. A client `tool_use` followed by text in the same message still is a merged step.
#[test]
fn provider_executed_tools_are_not_merged_steps() {
    for (file, profiles) in [
        (
            "anthropic-web-search.sse",
            &["opencode-fixed", "opencode", "agent-0.8", "tanstack"][..],
        ),
        (
            "anthropic-mcp-and-code-execution.sse",
            &["opencode-fixed", "opencode", "tanstack"][..],
        ),
    ] {
        for profile in profiles {
            let (code, doc) = diagnose_json(&fixture(file), &["--processor", profile]);
            let f = findings(&doc);
            assert_eq!(code, 0, "{file} {profile}: {}", describe(&f));
            assert!(f.is_empty(), "{file} {profile}: {}", describe(&f));
        }
    }
    // A stored session: a tool part marked `providerExecuted` followed by text in the same
    // step is neither a merged step nor a broken tool pairing (its client twin is the
    // step-merged fixture).
    let stored = repo("tests/fixtures/checks/provider-executed-tool-then-text.json");
    let (code, doc) = diagnose_json(&stored, &[]);
    assert_eq!(code, 0, "{}", describe(&findings(&doc)));
    assert!(findings(&doc).is_empty(), "{}", describe(&findings(&doc)));
    let (_, doc) = diagnose_json(&repo("tests/fixtures/checks/step-merged.json"), &[]);
    assert_eq!(
        of_rule(&findings(&doc), "step-merged").len(),
        1,
        "{}",
        describe(&findings(&doc))
    );
    let (_, doc) = diagnose_json(&fixture("anthropic-client-tool-then-text.sse"), &[]);
    let f = findings(&doc);
    let merged = of_rule(&f, "step-merged");
    assert_eq!(merged.len(), 1, "{}", describe(&f));
    assert!(
        merged[0]["message"]
            .as_str()
            .unwrap()
            .contains("toolu_01Read"),
        "{}",
        describe(&f)
    );
}

/// Timeline details of a replay of a fixture, in JSON.
fn timeline(file: &str, profile: &str) -> String {
    timeline_of(&fixture(file), profile)
}

/// Timeline details of a replay, in JSON.
fn timeline_of(path: &std::path::Path, profile: &str) -> String {
    let (_, doc) = json_of(&[
        "replay",
        path.to_str().unwrap(),
        "--format",
        "json",
        "--processor",
        profile,
    ]);
    doc["units"][0]["runs"][0]["timeline"].to_string()
}

/// A Responses `custom_tool_call` carries free-form text (an SQL string, an apply_patch body):
/// a healthy call is no invalid-input tool error, under any profile (agent-0.8 would crash on
/// the error it writes). Local shell and apply_patch calls are named as the SDK names them. A
/// function call whose arguments are not JSON still gets its tool error.
#[test]
fn responses_custom_tool_input_is_text_not_json() {
    for file in [
        "responses-custom-tools.sse",
        "responses-local-shell-and-apply-patch.sse",
    ] {
        for profile in ["opencode-fixed", "opencode", "agent-0.8", "tanstack"] {
            let (code, doc) = diagnose_json(&fixture(file), &["--processor", profile]);
            let f = findings(&doc);
            assert_eq!(code, 0, "{file} {profile}: {}", describe(&f));
            assert!(f.is_empty(), "{file} {profile}: {}", describe(&f));
        }
        let t = timeline(file, "opencode");
        assert!(!t.contains("Invalid input"), "{t}");
        assert!(t.contains("finishes: tool-calls"), "{t}");
    }
    let t = timeline("responses-custom-tools.sse", "opencode");
    assert!(
        t.contains("tool `run_sql`") && t.contains("awaiting execution"),
        "{t}"
    );
    let t = timeline("responses-local-shell-and-apply-patch.sse", "opencode");
    assert!(
        t.contains("tool `local_shell`") && t.contains("tool `apply_patch`"),
        "{t}"
    );
    let bad = "responses-function-bad-arguments.sse";
    let t = timeline(bad, "opencode");
    assert!(t.contains("Invalid input for tool read"), "{t}");
    let (_, doc) = diagnose_json(&fixture(bad), &["--processor", "agent-0.8"]);
    let f = findings(&doc);
    assert_eq!(of_rule(&f, "validation-crash").len(), 1, "{}", describe(&f));
}

/// A Responses stream without `response.created` still is a model call: its output items and
/// `response.completed` produce the step and its finish. Cut before `response.completed`, it is
/// truncated, and the open response is named.
#[test]
fn responses_without_created_still_count_their_steps() {
    let file = "responses-without-created.sse";
    let (code, doc) = diagnose_json(&fixture(file), &[]);
    assert_eq!(code, 0, "{}", describe(&findings(&doc)));
    assert!(findings(&doc).is_empty(), "{}", describe(&findings(&doc)));
    let t = timeline(file, "opencode");
    assert!(
        t.contains("\"starts\"") && t.contains("finishes: tool-calls"),
        "{t}"
    );
    let (_, doc) = diagnose_json(&fixture("responses-without-created-truncated.sse"), &[]);
    let f = findings(&doc);
    let t = of_rule(&f, "stream-truncated");
    assert_eq!(t.len(), 1, "{}", describe(&f));
    assert_eq!(of_rule(&f, "step-unclosed").len(), 1, "{}", describe(&f));
    assert!(
        t[0].to_string()
            .contains("no `response.created`) never completed"),
        "{}",
        t[0]
    );
}

/// `event:` lines without data dispatch nothing, but they name the protocol: a stream that ends
/// before any data arrived is truncated (only event lines, or a body cut right after its first
/// event line). A healthy stream with a data-less event (codex's test servers send
/// `event: response.created` alone) is not.
#[test]
fn a_stream_cut_before_any_data_is_truncated() {
    for (file, name) in [
        ("events-without-data.sse", "event: ping"),
        ("cut-after-event-line.sse", "event: message_start"),
    ] {
        let path = fixture(file);
        let (code, doc) = diagnose_json(&path, &[]);
        let f = findings(&doc);
        let t = of_rule(&f, "stream-truncated");
        assert_eq!(code, 1, "{file}: {}", describe(&f));
        assert_eq!(t.len(), 1, "{file}: {}", describe(&f));
        let message = t[0]["message"].as_str().unwrap();
        assert!(
            message.contains("Anthropic Messages") && message.contains(name),
            "{message}"
        );
        assert!(span_text(&path, t[0]).starts_with("event: "), "{file}");
    }
    let (code, doc) = diagnose_json(&fixture("healthy-responses-dataless-created.sse"), &[]);
    assert_eq!(code, 0, "{}", describe(&findings(&doc)));
    assert!(findings(&doc).is_empty(), "{}", describe(&findings(&doc)));
    // An empty capture tells no protocol and no truncation.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sse");
    std::fs::write(&empty, b": keep-alive\n\nevent: ping\n\n").unwrap();
    let (_, doc) = diagnose_json(&empty, &["--input", "sse"]);
    assert!(findings(&doc).is_empty(), "{}", describe(&findings(&doc)));
}

/// `response.created` and `response.completed` cut (not JSON): the skip-and-continue processor
/// reads the items in between as the step, and the SDK still finishes it (reason `error`): the
/// events are reported, no step is left open.
#[test]
fn a_response_whose_terminal_event_is_corrupt_still_finishes_its_step() {
    let file = "responses-created-and-completed-corrupt.sse";
    let (_, doc) = diagnose_json(&fixture(file), &["--processor", "opencode-fixed"]);
    let f = findings(&doc);
    assert_eq!(of_rule(&f, "sse-invalid-json").len(), 2, "{}", describe(&f));
    assert_eq!(f.len(), 2, "{}", describe(&f));
    let t = timeline(file, "opencode-fixed");
    assert!(
        t.contains("\"starts\"") && t.contains("finishes: error"),
        "{t}"
    );
}

#[test]
fn every_issue_of_one_payload_points_at_its_own_item() {
    // An issue per item of a long array in one event: each related label is on its item (the
    // payload's arrays are walked once for all of them).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("issues.sse");
    let head = r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}"#;
    let items = vec!["7"; 400].join(",");
    let bad = format!(
        r#"data: {{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{items}]}}"#
    );
    let text = format!("{head}\n\n{bad}\n\ndata: [DONE]\n\n");
    std::fs::write(&path, &text).unwrap();
    let (_, doc) = diagnose_json(&path, &[]);
    let all = findings(&doc);
    let found = of_rule(&all, "schema-violation");
    assert_eq!(found.len(), 1, "{}", describe(&all));
    let f = found[0];
    let mut offsets = vec![f["span"]["offset"].as_u64().unwrap()];
    offsets.extend(
        f["related"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["span"]["offset"].as_u64().unwrap()),
    );
    let start = (text.find(&bad).unwrap() + bad.find("[7").unwrap() + 1) as u64;
    let expected: Vec<u64> = (0..400).map(|k| start + 2 * k).collect();
    assert_eq!(offsets, expected);
}

/// Arguments that are not JSON are quoted in the tool error as far as any message quotes input:
/// a call's arguments can be as long as the stream, and the error is kept with the tool.
#[test]
fn a_tool_error_quotes_long_arguments_capped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long-bad-arguments.sse");
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut text = chunk(r#"{"role":"assistant","content":""}"#, "null");
    text += &chunk(
        r#"{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"read","arguments":"not json "}}]}"#,
        "null",
    );
    let piece = format!(
        r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":"{}"}}}}]}}"#,
        "y".repeat(10_000)
    );
    for _ in 0..20 {
        text += &chunk(&piece, "null");
    }
    text += &chunk("{}", "\"tool_calls\"");
    text += "data: [DONE]\n\n";
    std::fs::write(&path, text).unwrap();
    let t = timeline_of(&path, "opencode");
    assert!(t.contains("Invalid input for tool read"), "{t}");
    // The timeline cuts the error in turn and says how long it is: not the 200 kB of input.
    let kept: usize = t
        .split("…[")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    assert!((4096..5000).contains(&kept), "error of {kept} bytes: {t}");
}

/// A Responses stream that ends with an `mcp_approval_request` pauses the turn for the user's
/// approval: the call it asks for is made (provider-executed, named `mcp.<tool>` as the SDK
/// names it), the tool listing before it is no call, and nothing is missing. The approved
/// `mcp_call` of the next response answers that same call.
#[test]
fn an_mcp_approval_request_ends_a_turn_cleanly() {
    for file in [
        "responses-mcp-approval-request.sse",
        "responses-mcp-approved.sse",
    ] {
        for profile in ["opencode-fixed", "opencode", "agent-0.8", "tanstack"] {
            let (code, doc) = diagnose_json(&fixture(file), &["--processor", profile]);
            let f = findings(&doc);
            assert_eq!(code, 0, "{file} {profile}: {}", describe(&f));
            assert!(f.is_empty(), "{file} {profile}: {}", describe(&f));
        }
        let t = timeline(file, "opencode");
        assert!(t.contains("tool `mcp.search` mcpr_1"), "{t}");
        assert!(
            !t.contains("mcp_list_tools") && !t.contains("mcpl_1"),
            "{t}"
        );
    }
    let t = timeline("responses-mcp-approved.sse", "opencode");
    assert!(t.contains("completed"), "{t}");
    assert!(!t.contains("mcp_1 "), "{t}");
}
