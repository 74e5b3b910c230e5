//! Every command's `--format json` document fits the published schema
//! (`docs/schema/rewind-v1.schema.json`): the envelope (`version`, `tool`) and, where a command
//! prints them, findings, input errors, totals, files, rules and a request's problems.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

const SCHEMA: &str = "docs/schema/rewind-v1.schema.json";

fn validator() -> (boon::Schemas, boon::SchemaIndex) {
    let text = std::fs::read_to_string(repo(SCHEMA)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let loc = repo(SCHEMA).display().to_string();
    compiler.add_resource(&loc, schema).unwrap();
    let index = compiler.compile(&loc, &mut schemas).unwrap();
    (schemas, index)
}

#[test]
fn every_command_prints_a_document_the_schema_accepts() {
    let (schemas, index) = validator();
    let runs: &[&[&str]] = &[
        &["diagnose", "samples/zod-failed-status.log"],
        &["diagnose", "samples/har-streaming-response.har"],
        &["check", "samples"],
        &["check", "tests/fixtures/ci"],
        &["check", "tests/fixtures/storage-nonexistent-path"],
        &["replay", "samples/sse-concatenated-chunk.sse"],
        &[
            "sessions",
            "tests/fixtures/transcripts/claude-healthy-tool.jsonl",
        ],
        &[
            "request",
            "tests/fixtures/checks/tool-call-duplicate-claude.jsonl",
        ],
        &[
            "repair",
            "--dry-run",
            "tests/fixtures/transcripts/claude-orphan-tool.jsonl",
        ],
        &["rules"],
    ];
    let mut checked = 0;
    for args in runs {
        let out = rewind()
            .current_dir(repo(""))
            .args(*args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        if let Err(e) = schemas.validate(&doc, index) {
            panic!("{args:?} does not fit {SCHEMA}: {e:?}");
        }
        checked += 1;
    }
    assert_eq!(checked, runs.len());
}

/// The schema is strict where it promises: a document without the envelope, or with a finding
/// of an unknown severity, is refused.
#[test]
fn the_schema_refuses_what_the_envelope_rules_out() {
    let (schemas, index) = validator();
    let no_envelope = serde_json::json!({"findings": []});
    assert!(schemas.validate(&no_envelope, index).is_err());
    let bad = serde_json::json!({
        "version": 1,
        "tool": {"name": "rewind", "version": "0.1.0"},
        "findings": [{"rule": "x", "severity": "fatal", "message": "m", "file": "f", "fingerprint": "p"}]
    });
    assert!(schemas.validate(&bad, index).is_err());
    let next = serde_json::json!({"version": 2, "tool": {"name": "rewind", "version": "9"}});
    assert!(schemas.validate(&next, index).is_err());
}
