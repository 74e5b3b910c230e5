//! The version matrix: the same scenarios recorded by several versions of each real client
//! (`tests/fixtures/matrix/<client>/<version>/<scenario>/`, re-recorded by `scripts/matrix.sh`;
//! `RESULTS.md` there is the table). Every healthy recording of every version diagnoses with no
//! warning or error; every broken one names its cause; a resumed session has no error left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Broken recordings with nothing on disk to name, as the client wrote them.
const NOTHING_ON_DISK: &[(&str, &str, &str, &str)] = &[
    (
        "claude-code",
        "1.0.128",
        "kill_stream",
        "1.0.x writes no transcript before the first reply",
    ),
    (
        "claude-code",
        "2.0.27",
        "kill_stream",
        "2.0.27 persists only the Warmup side chain, not the prompt",
    ),
    (
        "claude-code",
        "2.0.77",
        "kill_stream",
        "2.0.77 persists only the queued prompt (a queue-operation) and the Warmup side chains",
    ),
];

/// The files rewind reads in a scenario's folder: transcripts, rollouts, stores.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name.ends_with(".jsonl") && name != "requests.jsonl")
                || name == "opencode.sql"
                || name == "storage"
        })
        .collect();
    out.sort();
    out
}

fn severe(findings: &[serde_json::Value]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f["severity"] == "warning" || f["severity"] == "error")
        .map(|f| format!("{} {} {}", f["severity"], f["rule"], f["message"]))
        .collect()
}

#[test]
fn every_version_of_every_client() {
    let root = repo("tests/fixtures/matrix");
    let mut checked = 0;
    let mut problems = Vec::new();
    for client in ["claude-code", "codex", "opencode"] {
        let Ok(versions) = std::fs::read_dir(root.join(client)) else {
            continue;
        };
        for version in versions.flatten().filter(|v| v.path().is_dir()) {
            let vname = version.file_name().to_string_lossy().into_owned();
            for scenario in std::fs::read_dir(version.path()).unwrap().flatten() {
                if !scenario.path().is_dir() {
                    continue;
                }
                let sname = scenario.file_name().to_string_lossy().into_owned();
                let files = inputs(&scenario.path());
                let mut all = Vec::new();
                for file in &files {
                    let (_, doc) = diagnose_json(file, &[]);
                    all.extend(findings(&doc));
                    checked += 1;
                }
                let here = format!("{client} {vname} {sname}");
                match sname.as_str() {
                    s if s.starts_with("healthy") || s == "tool" || s == "toolfail" => {
                        let bad = severe(&all);
                        if !bad.is_empty() {
                            problems.push(format!("{here}: healthy but {bad:?}"));
                        }
                    }
                    "kill_tool" | "kill_stream" => {
                        let named = all.iter().any(|f| {
                            (f["severity"] == "warning" || f["severity"] == "error")
                                && [
                                    "tool-never-finished",
                                    "message-incomplete",
                                    "stream-truncated",
                                    "step-unclosed",
                                ]
                                .contains(&f["rule"].as_str().unwrap_or_default())
                        });
                        let excused = NOTHING_ON_DISK
                            .iter()
                            .any(|(c, v, s, _)| *c == client && *v == vname && *s == sname);
                        if !named && !excused {
                            problems.push(format!(
                                "{here}: the kill is not named ({} files)",
                                files.len()
                            ));
                        }
                    }
                    _ => {
                        let errors: Vec<String> = severe(&all)
                            .into_iter()
                            .filter(|f| f.starts_with("\"error\""))
                            .collect();
                        if !errors.is_empty() {
                            problems.push(format!("{here}: resumed but {errors:?}"));
                        }
                    }
                }
            }
        }
    }
    assert!(checked >= 60, "{checked} recordings read");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
