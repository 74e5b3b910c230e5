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

// Incident families: logs that start with any preamble, and the rules for what real runs hit.

/// Diagnoses a corpus log that must be recognised without `--input`, and returns its findings.
fn diagnose_any(name: &str) -> Vec<Value> {
    let path = log(name);
    let (code, doc) = diagnose_json(&path, &[]);
    assert!(code == 0 || code == 1, "{name}: exit {code}");
    assert_eq!(doc["files"][0]["format"], "agent-log", "{name}: {doc}");
    findings(&doc)
}

fn related_lines(f: &Value) -> Vec<u64> {
    f["related"]
        .as_array()
        .map(|r| r.iter().filter_map(|x| x["line"].as_u64()).collect())
        .unwrap_or_default()
}

fn notes(f: &Value) -> String {
    f["notes"].to_string()
}

macro_rules! corpus_test {
    ($name:ident $body:block) => {
        #[test]
        #[cfg_attr(
            not(rewind_corpus),
            ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
        )]
        fn $name() $body
    };
}

corpus_test!(issue_192_premature_exit_model_swap {
    let f = diagnose_any("issue-192-premature-exit-model-swap.log");
    let early = one(&f, "loop-exited-early", |_| true);
    assert_eq!(early["session_id"], "ses_39a100a89ffeAsx49dC6vwrGlp");
    assert_eq!(early["message_id"], "msg_c65eff5eb001r3XKMdb0RIKPsV");
    assert_eq!(early["call_id"], "todowrite:0");
    assert!((1540..=1570).contains(&line(early)), "on the step_finish at 1545");
    assert!(msg(early).contains("`todowrite`") && msg(early).contains("`unknown`"));
    assert!(related_lines(early).iter().any(|l| (1594..=1600).contains(l)), "the loop's exit");
    assert!(notes(early).contains("success"), "the wrapper still printed success");

    let swap = one(&f, "model-substituted", |_| true);
    assert!(msg(swap).contains("kilo/glm-5-free") && msg(swap).contains("opencode/kimi-k2.5-free"));
    assert_eq!(line(swap), 222, "the resolved rawModel");
    assert!(related_lines(swap).contains(&179), "the agent's command line");
    assert_none(
        &f,
        &["tool-never-finished", "step-unclosed", "session-error", "tool-use-without-result"],
        "one balanced step with a completed tool",
    );
});

corpus_test!(issue_194_zero_tokens_exit {
    let f = diagnose_any("issue-194-zero-tokens-exit.log");
    let early = one(&f, "loop-exited-early", |_| true);
    assert!((2440..=2480).contains(&line(early)), "the step_finish near 2458");
    assert!(related_lines(early).iter().any(|l| (2505..=2513).contains(l)));
    assert_none(&f, &["tool-never-finished", "step-unclosed"], "balanced steps");
});

corpus_test!(issue_211_zero_tokens_usage_ignored {
    let f = diagnose_any("issue-211-zero-tokens-usage-ignored.log");
    let usage = one(&f, "usage-mismatch", |_| true);
    assert!(msg(usage).contains("14,533") && msg(usage).contains("164"));
    assert!(related_lines(usage).iter().any(|l| (1078..=1089).contains(l)), "what the provider sent");
    assert!(!related_lines(usage).is_empty() && line(usage) > 1089, "what the agent recorded");
    assert_eq!(usage["severity"], "error", "it ended the session");
});

corpus_test!(issue_171_model_swap_rate_limit {
    let f = diagnose_any("issue-171-model-swap-rate-limit.log");
    let swap = one(&f, "model-substituted", |_| true);
    assert!((301..=303).contains(&line(swap)) || msg(swap).contains("opencode/kimi-k2.5-free"));
    assert!(msg(swap).contains("kilo/glm-5-free"));
    let waits = of_rule(&f, "retry-wait-excessive");
    assert_eq!(waits.len(), 3, "{}", describe(&f));
    assert!((692..=696).contains(&line(waits[0])));
    assert!(msg(waits[0]).contains("12.9 h") && msg(waits[0]).contains("44,548 s"));
    assert!(related_lines(waits[0]).iter().any(|l| (665..=680).contains(l)));
    let timeout = one(&f, "session-error", |_| true);
    assert_eq!(timeout["session_id"], "ses_3a40ee95bffeo9ZopEOp4Juqir");
    assert!((734..=738).contains(&line(timeout)));
    assert!(msg(timeout).contains("The operation timed out"));
    assert!(notes(timeout).contains("retry sleep"), "tied to the wait: {timeout}");
    assert_none(&f, &["step-unclosed", "tool-never-finished"], "no step ever started");
    assert!(f.iter().all(|x| x["session_id"] != "opencode"), "`opencode` is a provider id");
});

corpus_test!(issue_181_retry_wait {
    let f = diagnose_any("issue-181-retry-wait.json");
    let waits = of_rule(&f, "retry-wait-excessive");
    assert_eq!(waits.len(), 2);
    assert_eq!(line(waits[0]), 27);
    assert!(msg(waits[0]).contains("15.5 h") && msg(waits[0]).contains("54,847 s"));
    assert!(waits.iter().all(|w| w["severity"] == "warning"));
    assert_none(&f, &["session-error", "undecodable-record"], "six log objects");
    assert!(f.iter().all(|x| x["session_id"] != "opencode"));
});

corpus_test!(issue_62_rate_limit_crash {
    let f = diagnose_any("issue-62-rate-limit-crash.json");
    let crash = one(&f, "session-error", |_| true);
    assert!(msg(crash).contains("UnhandledRejection") && msg(crash).contains("AI_RetryError"));
    assert!(msg(crash).contains("Failed after 3 attempts") && msg(crash).contains("rate limit"));
    assert!(notes(crash).contains("retries were exhausted") && notes(crash).contains("process died"));
});

corpus_test!(issue_62_provider_400 {
    let f = diagnose_any("issue-62-provider-400.json");
    let err = one(&f, "session-error", |_| true);
    assert_eq!(err["session_id"], "ses_4d6f3284cffeJYqUKoBG8t8koG");
    assert!(msg(err).contains("APIError") && msg(err).contains("not retryable"));
    assert!(msg(err).contains("cache_control cannot be set for empty text blocks"));
    assert_none(&f, &["empty-text-part"], "the empty block was the system prompt");
});

corpus_test!(issue_200_model_not_found {
    let f = diagnose_any("issue-200-model-not-found.log");
    let err = one(&f, "session-error", |_| true);
    assert_eq!(err["session_id"], "ses_37da35ff5ffe703mTnfaffy5HR");
    assert!((648..=658).contains(&line(err)));
    assert!(msg(err).contains("ProviderModelNotFoundError"));
    assert!(related_lines(err).iter().any(|l| (689..=703).contains(l)), "the Bun stack dump");
    assert!(related_lines(err).contains(&737), "the wrapper's success line");
    assert!(notes(err).contains("still reported success") && notes(err).contains("no step ever started"));
    assert_none(&f, &["model-substituted", "step-unclosed", "undecodable-record"], "a normal expansion");
});

corpus_test!(issue_102_provider_500_crash {
    let f = diagnose_any("issue-102-provider-500-crash.log");
    let err = one(&f, "session-error", |_| true);
    assert_eq!(err["session_id"], "ses_4aeef8f86ffejyBcZwhU8uQtwq");
    assert!((329..=333).contains(&line(err)), "the AI_RetryError");
    assert!(msg(err).contains("AI_RetryError") && msg(err).contains("Internal error encountered"));
    assert!(related_lines(err).contains(&338), "exit code 1");
    assert!(notes(err).contains("500"), "tied to the provider's 500s: {err}");
    assert_none(&f, &["model-substituted", "step-unclosed"], "an alias and a small model");
});

corpus_test!(issue_208_provider_401 {
    let f = diagnose_any("issue-208-provider-401.log");
    let err = one(&f, "session-error", |x| x["severity"] == "error");
    assert_eq!(err["session_id"], "ses_34d3f2219ffeJnyYIj8tTX7xoZ");
    assert!((1790..=1810).contains(&line(err)));
    assert!(msg(err).contains("APIError") && msg(err).contains("Model kimi-k2.5-free not supported"));
    assert!(msg(err).contains("not retryable"));
    assert_none(&f, &["model-substituted", "retry-wait-excessive", "step-unclosed"], "asked and ran kimi-k2.5-free");
});

corpus_test!(issue_38_claude_code_image_400 {
    let f = diagnose_any("issue-38-claude-code-image-400.log");
    let err = one(&f, "session-error", |_| true);
    assert_eq!(err["session_id"], "78d218d3-0824-433f-9d38-09627c94506e");
    assert!((1280..=1295).contains(&line(err)), "the synthetic API Error message");
    assert!(msg(err).contains("Could not process image"));
    assert!(err.to_string().contains("is_error"), "the result record: {err}");
    assert!(related_lines(err).contains(&1103), "the Read of the PNG: {err}");
    assert!(err["related"].to_string().contains("image block"));
    assert_none(&f, &["tool-use-without-result"], "every tool_use has its tool_result");
});

corpus_test!(issue_96_healthy_echo {
    let f = diagnose_any("issue-96-healthy-echo.log");
    assert!(f.is_empty(), "zeros with reason `stop` are fine:\n{}", describe(&f));
    let (_, doc) = diagnose_json(&log("issue-96-healthy-echo.log"), &[]);
    let sessions = doc["files"][0]["sessions"].as_array().cloned().unwrap_or_default();
    assert_eq!(sessions.len(), 3);
    assert!(sessions.iter().all(|s| s["steps_started"] == 1 && s["steps_finished"] == 1));
});

corpus_test!(issue_177_healthy_excerpt {
    let f = diagnose_any("issue-177-healthy-excerpt.txt");
    let serious: Vec<Value> = f.iter().filter(|x| x["severity"] != "info").cloned().collect();
    assert!(serious.is_empty(), "{}", describe(&serious));
    assert_none(&f, &["undecodable-record"], "the analyst's indented quote");
});

corpus_test!(the_human_report_opens_with_the_root_cause {
    let out = rewind()
        .arg("diagnose")
        .arg(log("issue-211-zero-tokens-usage-ignored.log"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("root cause: [usage-mismatch]"), "{first}");
    let usage = text.find("error[usage-mismatch]").unwrap_or(usize::MAX);
    let session = text.find("error[session-error]").unwrap_or(0);
    assert!(usage < session, "the cause before its consequence");

    let out = rewind()
        .arg("diagnose")
        .arg(log("issue-177-healthy-excerpt.txt"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no session in it"), "not silently clean: {text}");
});
