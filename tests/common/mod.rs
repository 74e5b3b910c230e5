//! Helpers shared by the integration tests: run the real binary, read its JSON output.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod codex_home;
pub mod opencode;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The `rewind` binary, with colour off and a fixed width so output is stable.
pub fn rewind() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("rewind").expect("binary");
    cmd.env("NO_COLOR", "1").env("COLUMNS", "100");
    cmd
}

/// The shared corpus of real recordings (`REWIND_CORPUS` overrides `../shared/corpus`).
pub fn corpus() -> PathBuf {
    match std::env::var_os("REWIND_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    }
}

/// A file of this repository.
pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs `rewind diagnose --format json` (plus `extra` args) and returns the exit code and document.
pub fn diagnose_json(path: &Path, extra: &[&str]) -> (i32, Value) {
    let out = rewind()
        .arg("diagnose")
        .arg("--format")
        .arg("json")
        .args(extra)
        .arg(path)
        .output()
        .expect("run rewind");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "rewind printed no JSON for {}: {e}\nstdout: {}\nstderr: {}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

/// The findings of a JSON document.
pub fn findings(doc: &Value) -> Vec<Value> {
    doc["findings"].as_array().cloned().unwrap_or_default()
}

/// Findings of one rule.
pub fn of_rule<'a>(findings: &'a [Value], rule: &str) -> Vec<&'a Value> {
    findings.iter().filter(|f| f["rule"] == rule).collect()
}

/// The primary line of a finding.
pub fn line(f: &Value) -> u64 {
    f["line"].as_u64().unwrap_or(0)
}

/// The bytes a finding's primary span covers.
pub fn span_text(path: &Path, f: &Value) -> String {
    let bytes = std::fs::read(path).expect("read corpus file");
    let off = f["span"]["offset"].as_u64().unwrap_or(0) as usize;
    let len = f["span"]["length"].as_u64().unwrap_or(0) as usize;
    String::from_utf8_lossy(&bytes[off..off + len]).into_owned()
}

/// A one-line description of findings, for assertion messages.
pub fn describe(findings: &[Value]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "{}:{} {} {}",
                f["rule"].as_str().unwrap_or_default(),
                line(f),
                f["severity"].as_str().unwrap_or_default(),
                f["message"].as_str().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
