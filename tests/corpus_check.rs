//! Acceptance test of `rewind check`: over the whole shared corpus it reports, file by file, the
//! union of what `rewind diagnose` reports for each recording (which the other corpus tests hold
//! to EXPECTED.md), skips nothing, and exits 1.
//!
//! It covers the folders of recordings this test knows (`RECORDINGS`); a folder added to the corpus
//! later (e.g. `transcripts/`, with its READMEs and scripts beside the recordings) gets its own test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use serde_json::Value;

fn rules_by_file(findings: impl Iterator<Item = Value>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in findings {
        let file = f["file"].as_str().unwrap_or_default().to_owned();
        out.entry(file)
            .or_default()
            .insert(f["rule"].as_str().unwrap_or_default().to_owned());
    }
    out
}

/// The corpus folders that hold nothing but recordings.
const RECORDINGS: [&str; 3] = ["agent-logs", "opencode", "sse"];

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn check_over_the_corpus_is_the_union_of_the_diagnoses() {
    let root = corpus();
    let out = rewind()
        .current_dir(&root)
        .args(["check", "--format", "jsonl", "-v"])
        .args(RECORDINGS)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = lines.pop().unwrap()["summary"].clone();
    assert_eq!(summary["unreadable"], 0);
    // Every file of RECORDINGS is a recording, whatever preamble it starts with.
    assert_eq!(summary["skipped"], 0);
    // EXPECTED.md: the healthy session gets no warning or error (information may name its
    // grep error and the loop that left with it).
    let healthy_serious: Vec<&Value> = lines
        .iter()
        .filter(|f| f["file"] == "agent-logs/issue-217-healthy.log" && f["severity"] != "info")
        .collect();
    assert!(healthy_serious.is_empty(), "{healthy_serious:?}");
    let checked = rules_by_file(lines.into_iter());

    // Every recording of the corpus, diagnosed on its own.
    let mut recordings = Vec::new();
    for dir in RECORDINGS {
        recordings.extend(walk(&root.join(dir)));
    }
    assert_eq!(summary["files"], recordings.len());
    for path in &recordings {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let out = rewind()
            .current_dir(&root)
            .args(["diagnose", "--format", "jsonl", &rel])
            .output()
            .unwrap();
        let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        lines.pop();
        let alone = rules_by_file(lines.into_iter())
            .remove(&rel)
            .unwrap_or_default();
        let together = checked.get(&rel).cloned().unwrap_or_default();
        assert_eq!(together, alone, "{rel}: check and diagnose disagree");
    }

    // Spot checks of what EXPECTED.md requires, per kind of input.
    let has = |file: &str, rule: &str| {
        assert!(
            checked.get(file).is_some_and(|r| r.contains(rule)),
            "{file} should report {rule}: {:?}",
            checked.get(file)
        );
    };
    has(
        "agent-logs/issue-149-zod-failed-status.log",
        "validation-crash",
    );
    has(
        "agent-logs/issue-169-sse-concatenated.log",
        "sse-concatenated-events",
    );
    has(
        "agent-logs/issue-215-stream-aborts.log",
        "tool-error-dropped",
    );
    // The dump's merged step breaks the request only as OpenCode 1.18.25 and older send it; its
    // store says 1.18.33 (`corpus_opencode::multi_session_dump` checks both).
    has(
        "opencode/opencode-1.18-multi-session.sql",
        "message-incomplete",
    );
    has("sse/openai-chat/opencode-malformed.sse", "schema-violation");
    has(
        "sse/ai-sdk-chunks/anthropic--spliced-message-start.chunks.txt",
        "stream-out-of-order",
    );
    has(
        "sse/recordings/rejects-malformed-assistant-tool-order-without-patch.json",
        "tool-use-without-result",
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
