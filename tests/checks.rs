//! Every check has a fixture that triggers it and one that must not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

/// (rule, fixture that triggers it, fixture that must not)
const CASES: &[(&str, &str, &str)] = &[
    (
        "schema-violation",
        "tests/fixtures/checks/schema-violation.log",
        "samples/clean-session.log",
    ),
    (
        "validation-crash",
        "samples/zod-failed-status.log",
        "samples/step-without-finish.log",
    ),
    (
        "tool-never-finished",
        "samples/zod-failed-status.log",
        "tests/fixtures/checks/genuine-tool-error.log",
    ),
    (
        "tool-error-dropped",
        "samples/pending-tool-aborted.log",
        "tests/fixtures/checks/genuine-tool-error.log",
    ),
    (
        "step-unclosed",
        "samples/step-without-finish.log",
        "samples/clean-session.log",
    ),
    (
        "session-error",
        "samples/step-without-finish.log",
        "samples/clean-session.log",
    ),
    (
        "stream-error-fatal",
        "samples/sse-concatenated.log",
        "samples/zod-failed-status.log",
    ),
    (
        "sse-concatenated-events",
        "samples/sse-concatenated.log",
        "samples/zod-failed-status.log",
    ),
    (
        "undecodable-record",
        "tests/fixtures/checks/undecodable-record.log",
        "samples/clean-session.log",
    ),
    (
        "tool-use-without-result",
        "tests/fixtures/checks/tool-use-without-result.json",
        "tests/fixtures/checks/tool-pairing-ok.json",
    ),
    (
        "sse-invalid-json",
        "tests/fixtures/stream/invalid-json.sse",
        "tests/fixtures/stream/healthy-chat.sse",
    ),
    (
        "stream-truncated",
        "tests/fixtures/stream/truncated.sse",
        "tests/fixtures/stream/healthy-anthropic.sse",
    ),
    (
        "stream-out-of-order",
        "tests/fixtures/stream/out-of-order.sse",
        "tests/fixtures/stream/healthy-anthropic.sse",
    ),
    (
        "stream-provider-error",
        "tests/fixtures/stream/provider-error.sse",
        "tests/fixtures/stream/healthy-chat.sse",
    ),
    (
        "step-merged",
        "tests/fixtures/checks/step-merged.json",
        "tests/fixtures/checks/export-healthy.json",
    ),
    (
        "empty-text-part",
        "tests/fixtures/checks/empty-text-part.json",
        "tests/fixtures/checks/export-healthy.json",
    ),
    (
        "tool-call-duplicate",
        "tests/fixtures/checks/tool-call-duplicate.json",
        "tests/fixtures/checks/export-healthy.json",
    ),
    (
        "message-incomplete",
        "tests/fixtures/checks/message-incomplete.json",
        "tests/fixtures/checks/export-healthy.json",
    ),
    (
        "loop-exited-early",
        "tests/fixtures/checks/loop-exited-early.log",
        "tests/fixtures/checks/loop-continues.log",
    ),
    (
        "usage-mismatch",
        "tests/fixtures/checks/usage-mismatch.log",
        "tests/fixtures/checks/usage-recorded.log",
    ),
    (
        "model-substituted",
        "tests/fixtures/checks/model-substituted.log",
        "tests/fixtures/checks/model-as-asked.log",
    ),
    (
        "retry-wait-excessive",
        "tests/fixtures/checks/retry-wait-excessive.log",
        "tests/fixtures/checks/retry-wait-short.log",
    ),
];

fn rules_reported(path: &str) -> Vec<String> {
    let (_, doc) = diagnose_json(&repo(path), &[]);
    findings(&doc)
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn each_check_triggers_on_its_fixture_and_not_on_the_clean_one() {
    for (rule, bad, good) in CASES {
        assert!(
            rules_reported(bad).iter().any(|r| r == rule),
            "{rule} does not trigger on {bad}"
        );
        assert!(
            !rules_reported(good).iter().any(|r| r == rule),
            "{rule} triggers on {good}"
        );
    }
}

#[test]
fn each_check_has_a_case() {
    let out = rewind()
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    let rules: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let missing: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .filter(|name| !CASES.iter().any(|(rule, _, _)| rule == name))
        .collect();
    assert!(missing.is_empty(), "checks without fixtures: {missing:?}");
}

/// Healthy cases that looked like incidents: (rule, fixture that must not trigger it).
const SILENT: &[(&str, &str)] = &[
    // A stderr banner the wrapper wrapped as a `RuntimeError`, and its report matching it.
    ("session-error", "tests/fixtures/checks/stderr-banner.log"),
    // The gateway's accounting chunk after `[DONE]`.
    (
        "stream-out-of-order",
        "tests/fixtures/stream/gateway-trailer.sse",
    ),
    // An empty text part whose next request went through.
    (
        "empty-text-part",
        "tests/fixtures/checks/empty-text-harmless.log",
    ),
    // A synthetic echo model: zero tokens with reason `stop`.
    (
        "loop-exited-early",
        "tests/fixtures/checks/loop-continues.log",
    ),
    ("usage-mismatch", "tests/fixtures/checks/loop-continues.log"),
];

#[test]
fn healthy_cases_that_look_like_incidents_stay_silent() {
    for (rule, good) in SILENT {
        let reported = rules_reported(good);
        assert!(
            !reported.iter().any(|r| r == rule),
            "{rule} triggers on {good}"
        );
        assert!(reported.is_empty(), "{good} is healthy, got {reported:?}");
    }
}

#[test]
fn a_logged_stream_shows_what_the_step_lost() {
    let (_, doc) = diagnose_json(
        &repo("tests/fixtures/checks/loop-exited-early-stream.log"),
        &[],
    );
    let f = findings(&doc);
    let early = of_rule(&f, "loop-exited-early");
    assert_eq!(early.len(), 1, "{}", describe(&f));
    assert!(early[0]["notes"].to_string().contains("`tool_calls`"));
    let usage = of_rule(&f, "usage-mismatch");
    assert_eq!(usage.len(), 1, "{}", describe(&f));
    assert!(usage[0]["message"].to_string().contains("15,333"));
    assert_eq!(usage[0]["severity"], "error", "the step ended the session");
}

#[test]
fn one_failure_is_one_finding_with_its_traces() {
    let (_, doc) = diagnose_json(&repo("tests/fixtures/checks/model-not-found.log"), &[]);
    let f = findings(&doc);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    let err = &f[0];
    assert_eq!(err["rule"], "session-error");
    let related = err["related"].to_string();
    assert!(
        related.contains("uncaught"),
        "the runtime's stack dump: {related}"
    );
    assert!(related.contains("still reported success"), "{related}");
    assert!(err["notes"].to_string().contains("no step ever started"));
}

#[test]
fn a_store_shows_which_model_answered() {
    let bad = rules_reported("tests/fixtures/checks/export-model-substituted.json");
    assert!(bad.iter().any(|r| r == "model-substituted"), "{bad:?}");
    let good = rules_reported("tests/fixtures/checks/export-healthy.json");
    assert!(!good.iter().any(|r| r == "model-substituted"), "{good:?}");
}
