//! Per-rule tests: every rule has a fixture that triggers it and a clean fixture of the closest
//! healthy case that must not, and what it prints is pinned (human and JSON output, with only that
//! rule selected) in `tests/snapshots/rules__<rule>.{human,json}.snap`.
//!
//! Adding a rule: its check file, one row in `CASES`, `tests/fixtures/rules/<rule>.clean.<ext>`,
//! then `cargo insta review` to accept its two snapshots.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

/// (rule, a fixture that triggers it). The clean twin is `tests/fixtures/rules/<rule>.clean.*`.
const CASES: &[(&str, &str)] = &[
    (
        "compaction-summary-lost",
        "tests/fixtures/checks/compaction-summary-lost.jsonl",
    ),
    (
        "schema-violation",
        "tests/fixtures/checks/schema-violation.log",
    ),
    ("validation-crash", "samples/zod-failed-status.log"),
    ("tool-never-finished", "samples/zod-failed-status.log"),
    ("tool-error-dropped", "samples/pending-tool-aborted.log"),
    ("step-unclosed", "samples/step-without-finish.log"),
    ("session-error", "samples/step-without-finish.log"),
    ("stream-error-fatal", "samples/sse-concatenated.log"),
    ("sse-concatenated-events", "samples/sse-concatenated.log"),
    (
        "tool-use-without-result",
        "tests/fixtures/checks/tool-use-without-result.json",
    ),
    (
        "undecodable-record",
        "tests/fixtures/checks/undecodable-record.log",
    ),
    ("sse-invalid-json", "tests/fixtures/stream/invalid-json.sse"),
    ("stream-truncated", "tests/fixtures/stream/truncated.sse"),
    (
        "stream-out-of-order",
        "tests/fixtures/stream/out-of-order.sse",
    ),
    (
        "stream-provider-error",
        "tests/fixtures/stream/provider-error.sse",
    ),
    ("step-merged", "tests/fixtures/checks/step-merged.json"),
    (
        "empty-text-part",
        "tests/fixtures/checks/empty-text-part.json",
    ),
    (
        "tool-call-duplicate",
        "tests/fixtures/checks/tool-call-duplicate.json",
    ),
    (
        "message-incomplete",
        "tests/fixtures/checks/message-incomplete.json",
    ),
    (
        "loop-exited-early",
        "tests/fixtures/checks/loop-exited-early.log",
    ),
    ("usage-mismatch", "tests/fixtures/checks/usage-mismatch.log"),
    (
        "model-substituted",
        "tests/fixtures/checks/model-substituted.log",
    ),
    (
        "retry-wait-excessive",
        "tests/fixtures/checks/retry-wait-excessive.log",
    ),
    ("session-hidden", "tests/fixtures/checks/session-hidden.sql"),
    (
        "reply-truncated",
        "tests/fixtures/checks/reply-truncated.json",
    ),
    (
        "storage-file-damaged",
        "tests/fixtures/checks/storage-file-damaged",
    ),
    (
        "tool-result-orphaned",
        "tests/fixtures/transcripts/claude-compact-orphan-result.jsonl",
    ),
    (
        "transcript-tree-broken",
        "tests/fixtures/transcripts/claude-tree-gap.jsonl",
    ),
    (
        "rollout-order-broken",
        "tests/fixtures/transcripts/codex-ordinal-reused.jsonl",
    ),
    (
        "subagent-orphaned",
        "tests/fixtures/transcripts/subagent-orphaned/5ub00000-0000-4000-8000-000000000001.jsonl",
    ),
    (
        "transcript-oversized",
        "tests/fixtures/transcripts/claude-long-line.jsonl",
    ),
    ("run-hung", "tests/fixtures/checks/run-hung.log"),
    (
        "thinking-modified",
        "tests/fixtures/transcripts/claude-thinking/kill_tool/886e3896-7ebe-4e64-a23a-94324a296304.jsonl",
    ),
];

/// More shapes of a rule than its case, each with a twin of its own: (rule, shape, a fixture that
/// triggers it, the closest healthy case, which must not). What the shape prints is pinned in
/// `tests/snapshots/rules__<rule>@<shape>.{human,json}.snap`.
const SHAPES: &[(&str, &str, &str, &str)] = &[
    (
        "stream-truncated",
        "relay",
        "tests/fixtures/checks/stream-truncated-relay.har",
        "tests/fixtures/rules/stream-truncated.relay.clean.har",
    ),
    (
        "loop-exited-early",
        "tool-error",
        "tests/fixtures/checks/loop-exited-early-tool-error.log",
        "tests/fixtures/rules/loop-exited-early.tool-error.clean.log",
    ),
    (
        "usage-mismatch",
        "nested-details",
        "tests/fixtures/checks/usage-mismatch-nested-details.log",
        "tests/fixtures/rules/usage-mismatch.nested-details.clean.log",
    ),
    (
        "model-substituted",
        "fallback",
        "tests/fixtures/checks/model-substituted-fallback.txt",
        "tests/fixtures/rules/model-substituted.fallback.clean.txt",
    ),
    (
        "run-hung",
        "ci-timeout",
        "tests/fixtures/checks/run-hung-ci-timeout.log",
        "tests/fixtures/rules/run-hung.ci-timeout.clean.log",
    ),
    (
        "tool-never-finished",
        "unread-result",
        "tests/fixtures/checks/tool-never-finished-unread-result.log",
        "tests/fixtures/rules/tool-never-finished.unread-result.clean.log",
    ),
    (
        "tool-call-duplicate",
        "claude-transcript",
        "tests/fixtures/checks/tool-call-duplicate-claude.jsonl",
        "tests/fixtures/rules/tool-call-duplicate.claude-transcript.clean.jsonl",
    ),
    (
        "compaction-summary-lost",
        "empty",
        "tests/fixtures/checks/compaction-summary-lost-empty.jsonl",
        "tests/fixtures/rules/compaction-summary-lost.clean.jsonl",
    ),
    (
        "compaction-summary-lost",
        "codex",
        "tests/fixtures/checks/compaction-summary-lost-codex.jsonl",
        "tests/fixtures/rules/compaction-summary-lost.codex.clean.jsonl",
    ),
    (
        "thinking-modified",
        "blank",
        "tests/fixtures/checks/thinking-modified-blank.jsonl",
        "tests/fixtures/rules/thinking-modified.blank.clean.jsonl",
    ),
    (
        "step-unclosed",
        "unread-finish",
        "tests/fixtures/checks/step-unclosed-unread-finish.log",
        "tests/fixtures/rules/step-unclosed.unread-finish.clean.log",
    ),
];

/// The rules the binary knows, as `rewind rules --format json` lists them.
fn catalogue() -> Vec<Value> {
    let out = rewind()
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["rules"]
        .as_array()
        .cloned()
        .unwrap()
}

/// `tests/fixtures/rules/<rule>.clean.*`.
fn clean_fixture(rule: &str) -> Option<PathBuf> {
    let prefix = format!("{rule}.clean.");
    std::fs::read_dir(repo("tests/fixtures/rules"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
}

/// `rewind diagnose --select RULE` on a file of this repository, run from its root.
fn diagnose(rule: &str, rel: &str, format: &str) -> String {
    let out = rewind()
        .current_dir(repo(""))
        .args(["diagnose", "--select", rule, "--format", format, rel])
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(2),
        "{rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn rules_of(json: &str) -> Vec<String> {
    let doc: Value = serde_json::from_str(json).unwrap();
    findings(&doc)
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn each_rule_fires_on_its_fixture_and_prints_what_is_pinned() {
    for (rule, fixture) in CASES {
        let json = diagnose(rule, fixture, "json");
        let fired = rules_of(&json);
        assert!(!fired.is_empty(), "{rule} does not trigger on {fixture}");
        assert!(
            fired.iter().all(|r| r == rule),
            "--select {rule} reported {fired:?}"
        );
        let mut doc: Value = serde_json::from_str(&json).unwrap();
        doc["tool"]["version"] = "[version]".into();
        insta::assert_json_snapshot!(format!("{rule}.json"), doc);
        insta::assert_snapshot!(format!("{rule}.human"), diagnose(rule, fixture, "human"));
    }
}

#[test]
fn each_rule_stays_quiet_on_its_clean_twin() {
    for (rule, _) in CASES {
        let clean = clean_fixture(rule).unwrap_or_else(|| panic!("{rule} has no clean fixture"));
        let rel = clean
            .strip_prefix(repo(""))
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let fired = rules_of(&diagnose(rule, &rel, "json"));
        assert!(fired.is_empty(), "{rule} triggers on {rel}");
    }
}

#[test]
fn each_shape_fires_on_its_fixture_and_not_on_its_twin() {
    for (rule, shape, fixture, clean) in SHAPES {
        let json = diagnose(rule, fixture, "json");
        let fired = rules_of(&json);
        assert!(
            !fired.is_empty(),
            "{rule} ({shape}) does not trigger on {fixture}"
        );
        let mut doc: Value = serde_json::from_str(&json).unwrap();
        doc["tool"]["version"] = "[version]".into();
        insta::assert_json_snapshot!(format!("{rule}@{shape}.json"), doc);
        insta::assert_snapshot!(
            format!("{rule}@{shape}.human"),
            diagnose(rule, fixture, "human")
        );
        let fired = rules_of(&diagnose(rule, clean, "json"));
        assert!(fired.is_empty(), "{rule} ({shape}) triggers on {clean}");
        // The twin is healthy: no rule warns about it.
        let (_, doc) = diagnose_json(&repo(clean), &[]);
        let loud: Vec<Value> = findings(&doc)
            .into_iter()
            .filter(|f| f["severity"] != "info")
            .collect();
        assert!(loud.is_empty(), "{clean}: {}", describe(&loud));
    }
}

#[test]
fn every_rule_has_a_case_and_every_fixture_a_rule() {
    let names: Vec<String> = catalogue()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    for name in &names {
        assert!(
            CASES.iter().any(|(rule, _)| rule == name),
            "{name} has no case in tests/rules.rs"
        );
    }
    for entry in std::fs::read_dir(repo("tests/fixtures/rules")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let rule = name.split('.').next().unwrap_or_default();
        assert!(
            names.iter().any(|n| n == rule),
            "tests/fixtures/rules/{name} names no rule"
        );
    }
}

/// Rule names are a stable contract: this snapshot changes only when a rule is added.
#[test]
fn rule_names_are_pinned() {
    let names: Vec<String> = catalogue()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    insta::assert_snapshot!("rule_names", names.join("\n"));
}

/// The rule table of `docs/rules.md` and the repair table of `docs/repair.md` are generated from
/// the declarations: a change to a rule's severity, summary or fix must reach them.
/// `REWIND_BLESS=1` rewrites them.
#[test]
fn doc_tables_match_the_declarations() {
    let rules = catalogue();
    let mut table = String::from("| rule | severity | what it reports |\n|---|---|---|\n");
    let mut fixes = String::from("| rule | what `rewind repair` changes |\n|---|---|\n");
    for r in &rules {
        table += &format!(
            "| `{}` | {} | {} |\n",
            r["name"].as_str().unwrap(),
            r["severity"].as_str().unwrap(),
            r["summary"].as_str().unwrap()
        );
        if let Some(fix) = r["fix"].as_str() {
            fixes += &format!("| `{}` | {fix} |\n", r["name"].as_str().unwrap());
        }
    }
    for (file, marker, body) in [
        ("docs/rules.md", "rules", &table),
        ("docs/repair.md", "fixes", &fixes),
    ] {
        let path = repo(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut updated = text.clone();
        let begin = updated
            .find(&format!("<!-- {marker}:begin"))
            .unwrap_or_else(|| panic!("{file} has no `<!-- {marker}:begin` marker"));
        let begin = begin + updated[begin..].find("-->\n").unwrap() + 4;
        let end = updated
            .find(&format!("<!-- {marker}:end -->"))
            .unwrap_or_else(|| panic!("{file} has no `<!-- {marker}:end -->` marker"));
        updated.replace_range(begin..end, body);
        if std::env::var_os("REWIND_BLESS").is_some() {
            std::fs::write(&path, &updated).unwrap();
        } else {
            assert!(
                text == updated,
                "{file}'s generated table is out of date: run `REWIND_BLESS=1 cargo test --test rules`"
            );
        }
    }
}
