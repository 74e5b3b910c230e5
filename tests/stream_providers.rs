//! The binary on Gemini, Cohere and Bedrock stream captures (`tests/fixtures/stream/providers`,
//! built from the protocols' documented shapes): healthy captures diagnose with no warning or
//! error, broken ones name their cause, and a stream rewind does not understand gets no errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

fn fixture(name: &str) -> std::path::PathBuf {
    repo("tests/fixtures/stream/providers").join(name)
}

/// The protocol the capture was read under, and its findings' `(rule, severity)`.
fn diagnosed(name: &str) -> (i32, String, Vec<(String, String)>) {
    let (code, doc) = diagnose_json(&fixture(name), &[]);
    let fs = findings(&doc);
    let rules = fs
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_owned(),
                f["severity"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (code, doc.to_string(), rules)
}

fn assert_healthy(name: &str, protocol: &str) {
    let (code, doc, rules) = diagnosed(name);
    assert!(
        rules.iter().all(|(_, sev)| sev == "info"),
        "{name}: {rules:?}"
    );
    assert_eq!(code, 0, "{name}: {doc}");
    assert_eq!(protocol_of(name), protocol, "{name}");
}

/// The protocol `rewind replay` read the capture under.
fn protocol_of(name: &str) -> String {
    let out = rewind()
        .args(["replay", "--format", "json"])
        .arg(fixture(name))
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = doc.to_string();
    let k = found.find("\"protocol\":\"").map(|k| k + 12).unwrap_or(0);
    found[k..].split('"').next().unwrap_or_default().to_owned()
}

#[test]
fn healthy_gemini_captures_have_no_warning_or_error() {
    for name in [
        "gemini-text.sse",
        "gemini-tool-call.sse",
        "gemini-unknown-parts.jsonl",
        "gemini-text-array.json",
    ] {
        assert_healthy(name, "Gemini streamGenerateContent");
    }
}

/// Gemini without `alt=sse` streams one JSON array: each element is an event at its own bytes,
/// and an array cut before its last chunk's `finishReason` is truncated.
#[test]
fn a_gemini_json_array_is_read_element_by_element() {
    let (_, doc, rules) = diagnosed("gemini-array-cut.json");
    assert!(
        rules.contains(&("stream-truncated".to_owned(), "error".to_owned())),
        "{doc}"
    );
    let path = fixture("gemini-text-array.json");
    let (_, doc) = diagnose_json(&path, &[]);
    assert_eq!(doc["files"][0]["format"], "json-lines", "{doc}");
    // The same chunks as the SSE capture: the same session.
    let sse = diagnose_json(&fixture("gemini-text.sse"), &[]).1;
    assert_eq!(doc["files"][0]["sessions"], sse["files"][0]["sessions"]);
}

#[test]
fn healthy_cohere_captures_have_no_warning_or_error() {
    for name in ["cohere-text.sse", "cohere-tool-call.jsonl"] {
        assert_healthy(name, "Cohere v2 chat");
    }
}

#[test]
fn healthy_bedrock_captures_have_no_warning_or_error() {
    for name in [
        "bedrock-text.jsonl",
        "bedrock-tool-call.jsonl",
        "bedrock-tool-call.eventstream",
    ] {
        assert_healthy(name, "Bedrock ConverseStream");
    }
}

#[test]
fn a_gemini_call_without_its_terminal_chunk_is_named() {
    let (code, _, rules) = diagnosed("gemini-missing-terminal-function-call.sse");
    assert_eq!(code, 1);
    assert!(
        rules.contains(&("stream-out-of-order".into(), "error".into())),
        "{rules:?}"
    );
    assert!(
        rules.contains(&("tool-never-finished".into(), "error".into())),
        "{rules:?}"
    );
    let (_, doc) = diagnose_json(&fixture("gemini-missing-terminal-function-call.sse"), &[]);
    let f = of_rule(&findings(&doc), "stream-out-of-order")[0].clone();
    assert!(
        f["message"]
            .as_str()
            .unwrap_or_default()
            .contains("terminal `functionCall` chunk never came"),
        "{f}"
    );
}

#[test]
fn a_cohere_stream_cut_before_message_end_is_truncated() {
    let (code, _, rules) = diagnosed("cohere-truncated.sse");
    assert_eq!(code, 1);
    assert!(
        rules.contains(&("stream-truncated".into(), "error".into())),
        "{rules:?}"
    );
    let (_, doc) = diagnose_json(&fixture("cohere-truncated.sse"), &[]);
    let f = of_rule(&findings(&doc), "stream-truncated")[0].clone();
    assert!(
        f["message"]
            .as_str()
            .unwrap_or_default()
            .contains("`message-end`"),
        "{f}"
    );
}

#[test]
fn a_bedrock_exception_is_the_providers_error() {
    let (code, _, rules) = diagnosed("bedrock-throttled.jsonl");
    assert_eq!(code, 1);
    assert!(
        rules.contains(&("stream-provider-error".into(), "error".into())),
        "{rules:?}"
    );
}

#[test]
fn a_stream_of_unknown_variants_gets_no_errors() {
    // Cohere-looking event types Cohere does not have: a note, never errors about the content.
    let (code, doc, rules) = diagnosed("cohere-unknown-variants.jsonl");
    assert_eq!(code, 0);
    assert_eq!(
        rules,
        [("undecodable-record".into(), "info".into())],
        "{doc}"
    );
    assert!(
        protocol_of("cohere-unknown-variants.jsonl").starts_with("unknown protocol"),
        "{doc}"
    );
    // A Cohere v1 stream (`event_type`) is not claimed at all.
    let out = rewind()
        .arg("diagnose")
        .arg(fixture("cohere-v1-unknown.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_bedrock_frame_with_a_bad_crc_is_reported() {
    let (_, doc) = diagnose_json(&fixture("bedrock-bad-crc.eventstream"), &[]);
    let fs = findings(&doc);
    let f = of_rule(&fs, "undecodable-record");
    assert_eq!(f.len(), 1, "{}", describe(&fs));
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("CRC does not match"),
        "{}",
        f[0]
    );
}

#[test]
fn a_bedrock_capture_cut_inside_a_frame_is_truncated() {
    let (code, _, rules) = diagnosed("bedrock-cut.eventstream");
    assert_eq!(code, 1);
    assert!(
        rules.contains(&("stream-truncated".into(), "error".into())),
        "{rules:?}"
    );
    assert!(
        rules.contains(&("undecodable-record".into(), "warning".into())),
        "{rules:?}"
    );
}
