//! A capture of endless undecodable events: what rewind records of it stays bounded (the
//! findings, the replayed timeline, the differences between two processors) while every event
//! is still counted. `benches/bad_events.sh` shows the time and memory this keeps linear.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{diagnose_json, findings, of_rule, rewind};
use serde_json::Value;

/// Events recorded per kind (`store::MAX_EVENTS_PER_KIND`).
const CAP: usize = 1000;

fn capture(dir: &tempfile::TempDir, json_bad: usize, schema_bad: usize) -> std::path::PathBuf {
    let mut text = String::new();
    for _ in 0..json_bad {
        text.push_str("data: {\"a\":\n\n");
    }
    for _ in 0..schema_bad {
        text.push_str("data: {\"choices\":[{\"delta\":{\"content\":1}}]}\n\n");
    }
    let path = dir.path().join("bad.sse");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn findings_of_many_bad_events_are_capped_and_every_event_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(&dir, 3 * CAP, 2 * CAP);
    let (code, doc) = diagnose_json(&path, &[]);
    assert_eq!(code, 1);
    let all = findings(&doc);
    assert_eq!(of_rule(&all, "sse-invalid-json").len(), CAP);
    assert_eq!(of_rule(&all, "schema-violation").len(), CAP);
    assert!(all.len() <= 2 * CAP + 10, "{} findings", all.len());
    let counts = &doc["files"][0]["counts"];
    assert_eq!(counts["events"], 5 * CAP);
    assert_eq!(counts["undecodable events"], 5 * CAP);
    assert!(counts["events not recorded"].as_u64().unwrap() > 0);
}

#[test]
fn compare_of_many_bad_events_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(&dir, 5 * CAP, 0);
    let out = rewind()
        .args([
            "replay",
            "--compare",
            "opencode",
            "opencode-fixed",
            "--format",
            "json",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let unit = &doc["units"][0];
    assert_eq!(unit["events"], 5 * CAP);
    for run in unit["runs"].as_array().unwrap() {
        let timeline = run["timeline"].as_array().unwrap();
        assert!(timeline.len() <= 2 * CAP + 10, "{} entries", timeline.len());
    }
    let differences = unit["differences"].as_array().unwrap();
    assert!(differences.len() <= CAP + 10, "{} rows", differences.len());
}
