//! Acceptance test: the real agent logs of `../shared/corpus/agent-logs/`, diagnosed as
//! `../shared/corpus/EXPECTED.md` says. Without the corpus these tests are reported as ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

fn log(name: &str) -> std::path::PathBuf {
    corpus().join("agent-logs").join(name)
}

/// Diagnoses a corpus log, checks it decoded completely, and returns its findings.
fn diagnose(name: &str, objects: u64) -> Vec<Value> {
    let path = log(name);
    let (code, doc) = diagnose_json(&path, &[]);
    assert!(code == 0 || code == 1, "{name}: exit {code}");
    let counts = &doc["files"][0]["counts"];
    assert_eq!(counts["json objects"], objects, "{name}: JSON objects");
    assert_eq!(
        counts["undecodable objects"], 0,
        "{name}: undecodable objects"
    );
    findings(&doc)
}

fn assert_none(findings: &[Value], rules: &[&str], why: &str) {
    let bad: Vec<Value> = findings
        .iter()
        .filter(|f| rules.iter().any(|r| f["rule"] == *r))
        .cloned()
        .collect();
    assert!(bad.is_empty(), "{why}:\n{}", describe(&bad));
}

fn one<'a>(findings: &'a [Value], rule: &str, pred: impl Fn(&Value) -> bool) -> &'a Value {
    let matching: Vec<&Value> = of_rule(findings, rule)
        .into_iter()
        .filter(|f| pred(f))
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected one {rule} finding, got:\n{}",
        describe(findings)
    );
    matching[0]
}

fn msg(f: &Value) -> &str {
    f["message"].as_str().unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_149_zod_failed_status() {
    let f = diagnose("issue-149-zod-failed-status.log", 776);

    let crash = one(&f, "validation-crash", |_| true);
    assert!(
        (7329..=7339).contains(&line(crash)),
        "primary on the session.processor object"
    );
    assert!(msg(crash).contains("pending | running | completed | error"));
    assert!(
        msg(crash).contains("outside"),
        "says the written status was none of them"
    );
    let notes = crash["notes"].to_string();
    assert!(notes.contains("3 alternatives") && notes.contains("state.status"));
    assert!(notes.contains("not applicable"));
    assert_eq!(
        crash["part_id"], "prt_c192ee03b001rItjjWgsRlgj4U",
        "names the in-flight part"
    );
    let related: Vec<u64> = crash["related"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["line"].as_u64())
        .collect();
    assert!(
        related.iter().any(|l| (7349..=7359).contains(l)),
        "the error event"
    );
    assert!(related.contains(&7390), "the raw ZodError dump");

    let tool = one(&f, "tool-never-finished", |_| true);
    assert_eq!(tool["part_id"], "prt_c192ee03b001rItjjWgsRlgj4U");
    assert_eq!(tool["call_id"], "call_fb0bd3e8c5454009a49aceda");
    assert_eq!(tool["message_id"], "msg_c192cf612001klS1paWANI0dge");
    assert!(msg(tool).contains("`edit`") && msg(tool).contains("`running`"));
    assert!(
        (7282..7329).contains(&line(tool)),
        "inside the tool_use object at 7282"
    );

    let step = one(&f, "step-unclosed", |_| true);
    assert_eq!(step["message_id"], "msg_c192cf612001klS1paWANI0dge");

    let fatal = one(&f, "session-error", |f| f["severity"] == "error");
    assert!(msg(fatal).contains("UnknownError") && msg(fatal).contains("ZodError"));
    assert!(msg(fatal).contains("cancel") && msg(fatal).contains("idle"));
    let timeout = one(&f, "session-error", |f| (3805..=3810).contains(&line(f)));
    assert_eq!(
        timeout["severity"], "warning",
        "the earlier timeout is not the root cause"
    );
    assert!(msg(timeout).contains("The operation timed out"));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_169_sse_concatenated() {
    let path = log("issue-169-sse-concatenated.log");
    let f = diagnose("issue-169-sse-concatenated.log", 4348);

    let concat = one(&f, "sse-concatenated-events", |_| true);
    assert!(
        (36252..=36263).contains(&line(concat)),
        "in the object at 36252"
    );
    assert_eq!(
        span_text(&path, concat),
        "data:",
        "the label is on the embedded data:"
    );

    let fatal = one(&f, "stream-error-fatal", |_| true);
    assert!(
        (36271..=36281).contains(&line(fatal)),
        "the UnknownError at 36271"
    );

    let dropped = one(&f, "tool-error-dropped", |_| true);
    assert_eq!(dropped["part_id"], "prt_c5b4925d30010l5F6BrMXeE7d6");
    assert!(line(dropped) >= 36289, "the final write at 36289");
    assert!(msg(dropped).contains("`read`"));

    let step = one(&f, "step-unclosed", |_| true);
    assert_eq!(step["message_id"], "msg_c5b490d94001JytADaAvPm4n2k");

    let genuine: Vec<Value> = f
        .iter()
        .filter(|x| x["part_id"] == "prt_c5b4508eb001w2Jpiv3vSEY38U" && x["severity"] != "info")
        .cloned()
        .collect();
    assert!(
        genuine.is_empty(),
        "a real `File not found` is not an incident:\n{}",
        describe(&genuine)
    );
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_215_stream_aborts() {
    let f = diagnose("issue-215-stream-aborts.log", 1138);

    let mut steps: Vec<&str> = of_rule(&f, "step-unclosed")
        .iter()
        .filter_map(|x| x["message_id"].as_str())
        .collect();
    steps.sort_unstable();
    assert_eq!(
        steps,
        [
            "msg_d247c45c3001Y7LCx74o61Hn7e",
            "msg_d247ea665001ySCIN37UyBhbCl",
            "msg_d24808965001m0s0gJ20Ai6I4X",
            "msg_d2482aa2e001ZNi0N8UaRve5T0",
            "msg_d2484a81000151IVwC8vV6Z5Aj",
        ]
    );
    for step in of_rule(&f, "step-unclosed") {
        assert!(
            step["related"].to_string().contains("aborted"),
            "each step is tied to its abort event: {step}"
        );
    }

    let webfetch = one(&f, "tool-never-finished", |_| true);
    assert_eq!(webfetch["part_id"], "prt_d247c55b80010Ju101k5rE4uCT");
    assert!(msg(webfetch).contains("Tool execution aborted"));
    let mut dropped: Vec<&str> = of_rule(&f, "tool-error-dropped")
        .iter()
        .filter_map(|x| x["part_id"].as_str())
        .collect();
    dropped.sort_unstable();
    assert_eq!(
        dropped,
        [
            "prt_d247eb488001SVcsEEsA71LFBB",
            "prt_d24809295001noErrzzm8gKOI0",
            "prt_d2482b9ba001MR3o4CAnQAtPQI",
            "prt_d2484ae91001t1np0M6vW01JWS",
        ]
    );

    let socket = one(&f, "session-error", |x| (6278..=6283).contains(&line(x)));
    assert!(msg(socket).contains("socket connection was closed unexpectedly"));

    let crash = one(&f, "validation-crash", |_| true);
    assert!(msg(crash).contains("summary.diffs[1].additions"));
    assert!(msg(crash).contains("NaN"));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_157_process_crash() {
    let f = diagnose("issue-157-process-crash.log", 124);
    let tool = one(&f, "tool-never-finished", |_| true);
    assert_eq!(tool["part_id"], "prt_c58a4f53e001vx0hNDCIjTVhWi");
    assert!(msg(tool).contains("`todowrite`") && msg(tool).contains("`pending`"));
    let step = one(&f, "step-unclosed", |_| true);
    assert_eq!(step["message_id"], "msg_c58a4e2d1002klEZ5mTYEwudBg");
    let fatal = one(&f, "session-error", |_| true);
    assert!(
        (1118..=1295).contains(&line(fatal)),
        "the AI_RetryError at 1118"
    );
    assert!(msg(fatal).contains("AI_RetryError"));
    assert_eq!(fatal["severity"], "error");
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_152_usage_crash() {
    let f = diagnose("issue-152-usage-crash.log", 147);
    assert_none(
        &f,
        &["step-unclosed", "tool-never-finished", "tool-error-dropped"],
        "2 balanced steps and 2 completed tools",
    );
    let fatal = one(&f, "session-error", |_| true);
    assert!((1819..=1824).contains(&line(fatal)));
    assert!(msg(fatal).contains("input_tokens"));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_142_timeout() {
    let f = diagnose("issue-142-timeout.log", 71);
    assert_none(
        &f,
        &[
            "step-unclosed",
            "tool-never-finished",
            "tool-error-dropped",
            "validation-crash",
        ],
        "16 balanced steps and 21 completed tools",
    );
    let timeout = one(&f, "session-error", |_| true);
    assert!((1873..=1878).contains(&line(timeout)));
    assert!(msg(timeout).contains("The operation timed out"));
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn issue_217_healthy() {
    let path = log("issue-217-healthy.log");
    let f = diagnose("issue-217-healthy.log", 1176);
    let serious: Vec<Value> = f
        .iter()
        .filter(|x| x["severity"] != "info")
        .cloned()
        .collect();
    assert!(
        serious.is_empty(),
        "a healthy session:\n{}",
        describe(&serious)
    );
    let out = rewind().arg("diagnose").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
}
