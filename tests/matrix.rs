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

/// A message's shape: its role and its blocks (`text`, `call ID`, `result ID`), runs of text
/// counted once.
type Shape = (String, Vec<String>);

fn push_block(blocks: &mut Vec<String>, b: String) {
    if !(b == "text" && blocks.last().map(String::as_str) == Some("text")) {
        blocks.push(b);
    }
}

/// The messages of each Chat Completions request OpenCode sent in `dir` (the title requests
/// and the system prompt left out).
fn opencode_sent(dir: &Path) -> Vec<Vec<Shape>> {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["is_title"] == true {
            continue;
        }
        let mut shapes = Vec::new();
        for m in v["body"]["messages"].as_array().unwrap() {
            let role = m["role"].as_str().unwrap_or_default().to_owned();
            if role == "system" {
                continue;
            }
            let mut blocks = Vec::new();
            let content = &m["content"];
            let has_text = match content {
                serde_json::Value::String(s) => !s.is_empty(),
                serde_json::Value::Array(a) => !a.is_empty(),
                _ => false,
            };
            if role == "tool" {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                blocks.push(format!("result {id}"));
            } else if has_text {
                push_block(&mut blocks, "text".into());
            }
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                blocks.push(format!("call {}", c["id"].as_str().unwrap_or_default()));
            }
            shapes.push((role, blocks));
        }
        out.push(shapes);
    }
    out
}

/// The store a scenario's folder holds: a database's SQL dump (1.2 on) or a storage folder.
fn opencode_store(dir: &Path) -> Option<PathBuf> {
    ["opencode.sql", "storage"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.exists())
}

/// The request `rewind request` rebuilds from the store in `dir`.
fn opencode_rebuilt(dir: &Path) -> Vec<Shape> {
    let out = rewind()
        .args(["request", "--format", "json", "--provider", "openai"])
        .arg(opencode_store(dir).unwrap())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut blocks = Vec::new();
            for b in m["blocks"].as_array().unwrap() {
                let id = b["id"].as_str().unwrap_or_default();
                match b["type"].as_str().unwrap_or_default() {
                    "tool_use" => blocks.push(format!("call {id}")),
                    "tool_result" => blocks.push(format!("result {id}")),
                    "text" => push_block(&mut blocks, "text".into()),
                    other => blocks.push(other.to_owned()),
                }
            }
            (m["role"].as_str().unwrap_or_default().to_owned(), blocks)
        })
        .collect()
}

/// The request rewind rebuilds from each OpenCode version's store is the one that version sent:
/// after a finished turn its last request without the reply, after a kill its first request on
/// resume without the new prompt (1.0.185 leaves the killed call out, 1.1 on sends it with an
/// interrupted result).
#[test]
fn every_opencode_version_s_request_is_rebuilt_as_it_sent_it() {
    let root = repo("tests/fixtures/matrix/opencode");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    versions.sort();
    let (mut checked, mut wrong) = (0, Vec::new());
    for version in &versions {
        let v = version.file_name().unwrap().to_string_lossy().into_owned();
        for scenario in ["healthy", "tool", "toolfail"] {
            let d = version.join(scenario);
            if opencode_store(&d).is_none() {
                continue;
            }
            let mut ours = opencode_rebuilt(&d);
            while ours.last().is_some_and(|(role, _)| role == "assistant") {
                ours.pop();
            }
            let sent = opencode_sent(&d);
            checked += 1;
            if sent.last() != Some(&ours) {
                wrong.push(format!(
                    "{v} {scenario}: sent {:?}, ours {ours:?}",
                    sent.last()
                ));
            }
        }
        let (k, r) = (
            version.join("kill_tool"),
            version.join("resume_after_kill_tool"),
        );
        if opencode_store(&k).is_some() && r.join("requests.jsonl").exists() {
            let mut ours = opencode_rebuilt(&k);
            ours.push(("user".into(), vec!["text".into()]));
            let sent = opencode_sent(&r);
            checked += 1;
            if sent.first() != Some(&ours) {
                wrong.push(format!(
                    "{v} kill_tool → resume: sent {:?}, ours {ours:?}",
                    sent.first()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked >= 20, "{checked}");
}
