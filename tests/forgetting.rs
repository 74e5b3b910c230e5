//! A large agent log's diagnosis forgets the messages no rule needs (past
//! `replay::agent_log::FORGET_FROM_PARTS` live parts): what it prints must be what the whole
//! model gives, whatever the log holds after that point. Each case diagnoses a log of 24,000
//! parts with the default and with a threshold no log here reaches, and compares the JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fmt::Write as _;

use common::diagnose_json;
use serde_json::Value;

const SESSION: &str = "ses_0000000000000000000000001";

fn record(ty: &str, message: usize, part: &str, body: &str) -> String {
    format!(
        r#"{{"type":"{ty}","timestamp":1771057754652,"sessionID":"{SESSION}","part":{{"id":"prt_{message:010}{part}","sessionID":"{SESSION}","messageID":"msg_{message:010}",{body}}}}}"#
    )
}

fn step_start(m: usize) -> String {
    record("step_start", m, "a", r#""type":"step-start""#)
}

fn tool(m: usize, call: &str, status: &str) -> String {
    let state = match status {
        "running" => r#"{"status":"running","input":{"command":"ls"},"time":{"start":1}}"#.to_owned(),
        _ => r#"{"status":"completed","input":{"command":"ls"},"output":"a\nb","title":"ls","metadata":{},"time":{"start":1,"end":2}}"#.to_owned(),
    };
    record(
        "tool_use",
        m,
        "c",
        &format!(r#""type":"tool","callID":"{call}","tool":"bash","state":{state}"#),
    )
}

fn text(m: usize, part: &str, text: &str) -> String {
    record(
        "text",
        m,
        part,
        &format!(r#""type":"text","text":"{text}","time":{{"start":1,"end":2}}"#),
    )
}

fn step_finish(m: usize) -> String {
    record(
        "step_finish",
        m,
        "d",
        r#""type":"step-finish","reason":"stop","cost":0.01,"tokens":{"input":1200,"output":35,"reasoning":0,"cache":{"read":9000,"write":0}}"#,
    )
}

/// A healthy run of `messages` messages of four parts each (a step, a text and a tool call).
fn healthy(messages: usize) -> String {
    let mut log = String::new();
    for m in 0..messages {
        for line in [
            step_start(m),
            text(m, "b", "Listing the files."),
            tool(m, &format!("call_{m:010}"), "completed"),
            step_finish(m),
        ] {
            writeln!(log, "{line}").unwrap();
        }
    }
    log
}

/// The diagnosis of `log` with the default threshold, after checking that it is the whole
/// model's.
fn same_as_whole(log: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.log");
    std::fs::write(&path, log).unwrap();
    let forgetting = diagnose_json(&path, &[]);
    let whole = diagnose_json(&path, &["--forget-from-parts", "1000000000"]);
    assert_eq!(forgetting, whole);
    forgetting.1
}

fn rules(doc: &Value) -> Vec<String> {
    let mut rules: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect();
    rules.dedup();
    rules
}

#[test]
fn a_healthy_log_is_summarised_whole() {
    let doc = same_as_whole(&healthy(6000));
    assert!(rules(&doc).is_empty(), "{doc:#}");
    let session = &doc["files"][0]["sessions"][0];
    assert_eq!(session["messages"], 6000);
    assert_eq!(session["steps_started"], 6000);
    assert_eq!(session["steps_finished"], 6000);
    assert_eq!(session["tools"]["completed"], 6000);
}

#[test]
fn an_error_after_forgetting_is_reported_as_with_the_whole_model() {
    let mut log = healthy(6000);
    writeln!(log, "{}", step_start(6000)).unwrap();
    writeln!(log, "{}", tool(6000, "call_last", "running")).unwrap();
    writeln!(
        log,
        r#"{{"type":"error","timestamp":1771057754699,"sessionID":"{SESSION}","error":{{"name":"UnknownError","data":{{"message":"The operation timed out."}}}}}}"#
    )
    .unwrap();
    let doc = same_as_whole(&log);
    let found = rules(&doc);
    assert!(found.contains(&"session-error".to_owned()), "{found:?}");
    assert!(
        found.contains(&"tool-never-finished".to_owned()),
        "{found:?}"
    );
}

#[test]
fn a_message_a_rule_reports_on_its_own_is_kept() {
    // Message 3000 merges two steps (text after its tool call) and leaves a text part empty.
    let mut log = String::new();
    for (m, line) in healthy(6000).lines().enumerate() {
        writeln!(log, "{line}").unwrap();
        if m == 4 * 3000 + 2 {
            writeln!(log, "{}", text(3000, "cz", "and then")).unwrap();
            writeln!(log, "{}", text(3000, "b0", " ")).unwrap();
        }
    }
    let doc = same_as_whole(&log);
    let found = rules(&doc);
    assert!(found.contains(&"step-merged".to_owned()), "{found:?}");
}

#[test]
fn a_write_to_a_forgotten_message_reads_the_log_again() {
    // A late tool call in the first message, and a call id used twice.
    let mut log = healthy(6000);
    writeln!(log, "{}", tool(0, "call_0000000001", "completed")).unwrap();
    let doc = same_as_whole(&log);
    assert!(
        rules(&doc).contains(&"tool-call-duplicate".to_owned()),
        "{doc:#}"
    );
}

#[test]
fn a_late_duplicate_call_id_is_reported_as_with_the_whole_model() {
    // Two new messages at the end share a call id: the log is read again, keeping everything
    // from the first of them on.
    let mut log = healthy(6000);
    for m in [6000, 6001] {
        for line in [
            step_start(m),
            tool(m, "call_twice", "completed"),
            step_finish(m),
        ] {
            writeln!(log, "{line}").unwrap();
        }
    }
    let doc = same_as_whole(&log);
    assert!(
        rules(&doc).contains(&"tool-call-duplicate".to_owned()),
        "{doc:#}"
    );
    assert_eq!(doc["files"][0]["sessions"][0]["messages"], 6002);
}
