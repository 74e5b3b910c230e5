//! Incidents real agent runs have: healthy cases that look like incidents stay silent, and one
//! failure is one finding with its traces related to it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

fn rules_reported(path: &str) -> Vec<String> {
    let (_, doc) = diagnose_json(&repo(path), &[]);
    findings(&doc)
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
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
        "tests/fixtures/rules/loop-exited-early.clean.log",
    ),
    (
        "usage-mismatch",
        "tests/fixtures/rules/loop-exited-early.clean.log",
    ),
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

#[test]
fn a_retry_sleep_nobody_waited_out_is_information() {
    // A 19-hour sleep announced for a side request's rate limit, after which the agent goes on
    // working and the log ends three minutes later: nothing waited, so not a warning.
    let (code, doc) = diagnose_json(
        &repo("tests/fixtures/checks/retry-wait-not-waited.log"),
        &[],
    );
    let f = findings(&doc);
    let retry = of_rule(&f, "retry-wait-excessive");
    assert_eq!(retry.len(), 1, "{}", describe(&f));
    assert_eq!(retry[0]["severity"], "info");
    assert!(
        retry[0]["notes"]
            .to_string()
            .contains("nothing waited it out"),
        "{}",
        retry[0]
    );
    assert!(
        f.iter().all(|x| x["severity"] == "info"),
        "a healthy run with an unwaited sleep gets no warning: {}",
        describe(&f)
    );
    assert_eq!(code, 0);
    // The same sleep with no work after it (the run hung in it) stays a warning.
    let (_, doc) = diagnose_json(&repo("tests/fixtures/checks/retry-wait-excessive.log"), &[]);
    let f = findings(&doc);
    assert_eq!(
        of_rule(&f, "retry-wait-excessive")[0]["severity"],
        "warning"
    );
}
