//! The rendered diagnostics of the bundled samples, pinned with insta (`cargo insta review` to
//! accept an intended change).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

/// Human output with paths made relative so snapshots do not depend on the checkout.
fn human(sample: &str) -> String {
    let out = rewind()
        .current_dir(repo(""))
        .args(["diagnose", sample])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn zod_failed_status() {
    insta::assert_snapshot!(human("samples/zod-failed-status.log"));
}

#[test]
fn sse_concatenated() {
    insta::assert_snapshot!(human("samples/sse-concatenated.log"));
}

#[test]
fn pending_tool_aborted() {
    insta::assert_snapshot!(human("samples/pending-tool-aborted.log"));
}

#[test]
fn step_without_finish() {
    insta::assert_snapshot!(human("samples/step-without-finish.log"));
}

#[test]
fn clean_session() {
    insta::assert_snapshot!(human("samples/clean-session.log"));
}

#[test]
fn schema_violation() {
    insta::assert_snapshot!(human("tests/fixtures/checks/schema-violation.log"));
}

#[test]
fn json_output() {
    let out = rewind()
        .current_dir(repo(""))
        .args([
            "diagnose",
            "--format",
            "json",
            "samples/pending-tool-aborted.log",
        ])
        .output()
        .unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["tool"]["version"] = "[version]".into();
    insta::assert_json_snapshot!(doc);
}

/// An agent's output inside a GitHub Actions job log, as `gh run view --log` prints it: the
/// labels point at the JSON after each line's job, step and timestamp.
#[test]
fn github_actions_job_log() {
    insta::assert_snapshot!(human("tests/fixtures/agent-log/github-actions-job.log"));
}

/// A downloaded raw job log (a timestamp before each line) of a healthy run, pretty-printed.
#[test]
fn github_actions_raw_job_log() {
    insta::assert_snapshot!(human("tests/fixtures/agent-log/github-actions-raw-job.log"));
}
