//! Codex's home folder and thread index (`state_5.sqlite`) against its rollouts: recognition,
//! each disagreement (the fixture homes of `tests/fixtures/codex-home/`), the repair, and the
//! real Codex's verdict on a repaired home when it is installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::codex_home::{build_fixture_homes, temp_home};
use common::*;
use serde_json::Value;

fn home(variant: &str) -> PathBuf {
    build_fixture_homes();
    repo("tests/fixtures/codex-home").join(variant)
}

fn loud(doc: &Value) -> Vec<Value> {
    findings(doc)
        .into_iter()
        .filter(|f| f["severity"] != "info")
        .collect()
}

fn messages(doc: &Value, rule: &str) -> Vec<String> {
    findings(doc)
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| f["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_healthy_home_recorded_by_codex_is_silent() {
    let h = home("healthy");
    let (code, doc) = diagnose_json(&h, &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(loud(&doc).is_empty(), "{}", describe(&loud(&doc)));
    // The index and the rollout are both diagnosed.
    let text = doc.to_string();
    assert!(text.contains("state_5.sqlite"), "{text}");
    assert!(text.contains("rollout-2026-11-28T20-48-58"), "{text}");
    // The state database alone is recognised by its schema.
    let (code, doc) = diagnose_json(&h.join("state_5.sqlite"), &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(loud(&doc).is_empty(), "{}", describe(&loud(&doc)));
}

#[test]
fn each_variant_is_named_as_codex_doctor_names_it() {
    let cases = [
        (
            "dangling",
            "thread-index-drift",
            "state DB rows point at missing or unusable rollout files",
        ),
        (
            "invisible",
            "thread-index-drift",
            "rollout files are missing from the state DB",
        ),
        (
            "duplicate",
            "thread-index-drift",
            "duplicate thread inventory entries found",
        ),
        (
            "archive-mismatch",
            "thread-index-drift",
            "state DB archive flags disagree with rollout file locations",
        ),
        (
            "drift",
            "thread-projection-drift",
            "the thread-history projection cursor does not match the rollout",
        ),
        (
            "not-a-database",
            "state-db-unreadable",
            "the state DB cannot be read",
        ),
    ];
    for (variant, rule, words) in cases {
        let (_, doc) = diagnose_json(&home(variant), &[]);
        let got = messages(&doc, rule);
        assert_eq!(got, vec![words.to_owned()], "{variant}: {doc}");
        let others: Vec<Value> = loud(&doc)
            .into_iter()
            .filter(|f| f["rule"] != rule)
            .collect();
        assert!(others.is_empty(), "{variant}: {}", describe(&others));
    }
}

#[test]
fn an_unreadable_state_db_is_one_finding_and_the_rollouts_are_still_diagnosed() {
    let (code, doc) = diagnose_json(&home("not-a-database"), &[]);
    assert_eq!(code, 1, "{doc}");
    let text = doc.to_string();
    assert!(text.contains("file is not a database"), "{text}");
    assert!(text.contains("rollout-2026-11-28T20-48-58"), "{text}");
}

#[test]
fn repair_drops_a_dangling_row_after_a_backup_and_is_idempotent() {
    let (_tmp, h) = temp_home("dangling");
    let db = h.join("state_5.sqlite");
    let before = std::fs::read(&db).unwrap();
    let out = rewind()
        .args(["repair", "--dry-run", "--format", "json"])
        .arg(&h)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["plan"].as_array().unwrap().len(), 1, "{plan}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "a dry run wrote");
    let out = rewind()
        .args(["repair", "--format", "json"])
        .arg(&h)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    let backup = PathBuf::from(done["backup"].as_str().unwrap());
    assert!(backup.is_file(), "{done}");
    let (code, doc) = diagnose_json(&h, &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(loud(&doc).is_empty(), "{}", describe(&loud(&doc)));
    let out = rewind()
        .args(["repair", "--format", "json"])
        .arg(&h)
        .output()
        .unwrap();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(again["plan"].as_array().unwrap().is_empty(), "{again}");
    assert!(again["backup"].is_null(), "{again}");
}

#[test]
fn repair_refuses_a_live_writer_without_force() {
    let (_tmp, h) = temp_home("dangling");
    std::fs::write(h.join("state_5.sqlite-wal"), b"").unwrap();
    let out = rewind().arg("repair").arg(&h).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("--force"), "{err}");
}

#[test]
fn repair_says_what_it_leaves_to_codex() {
    let (_tmp, h) = temp_home("invisible");
    let out = rewind()
        .args(["repair", "--dry-run", "--format", "json"])
        .arg(&h)
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(plan["plan"].as_array().unwrap().is_empty(), "{plan}");
    let text = plan["unfixable"].to_string();
    assert!(text.contains("move state_5.sqlite"), "{text}");
}

/// The real Codex (`REWIND_CODEX` or the version the fixtures were recorded with).
fn codex() -> Option<PathBuf> {
    let p = std::env::var_os("REWIND_CODEX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/clients/codex-0.171.0/node_modules/.bin/codex"));
    p.is_file().then_some(p)
}

fn doctor_parity(codex: &Path, home: &Path) -> String {
    let out = std::process::Command::new(codex)
        .args(["doctor", "--json"])
        .env("HOME", home.parent().unwrap())
        .env("CODEX_HOME", home)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["checks"]["state.rollout_db_parity"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_real_codex_agrees_with_the_repaired_index() {
    let Some(codex) = codex() else {
        println!("skipped: Codex 0.171.0 is not installed (set REWIND_CODEX to its `codex`)");
        return;
    };
    let (_tmp, h) = temp_home("dangling");
    assert_eq!(doctor_parity(&codex, &h), "warning");
    // Codex's doctor has exited; its fresh `-wal` is not a live writer.
    let out = rewind()
        .args(["repair", "--force"])
        .arg(&h)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(doctor_parity(&codex, &h), "ok");
}

#[test]
fn an_archived_thread_under_archived_sessions_is_healthy() {
    let (_tmp, h) = temp_home("healthy");
    let rollout = common::codex_home::ROLLOUT.rsplit('/').next().unwrap();
    let from = h.join("sessions/2026/11/28").join(rollout);
    let to = h.join("archived_sessions").join(rollout);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::rename(&from, &to).unwrap();
    let conn = rusqlite::Connection::open(h.join("state_5.sqlite")).unwrap();
    conn.execute(
        "UPDATE threads SET archived = 1, archived_at = created_at, rollout_path = ?1",
        [to.to_string_lossy()],
    )
    .unwrap();
    drop(conn);
    let (code, doc) = diagnose_json(&h, &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(loud(&doc).is_empty(), "{}", describe(&loud(&doc)));
    assert!(doc.to_string().contains("archived_sessions"), "{doc}");
}

#[test]
fn sessions_without_a_store_counts_the_thread_index() {
    let (tmp, _h) = temp_home("dangling");
    let out = rewind()
        .args(["sessions", "--format", "json"])
        .env("HOME", tmp.path())
        .env_remove("CODEX_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let index = &doc["codex_index"];
    assert_eq!(index["threads_rows"], 1, "{doc}");
    assert_eq!(index["rollout_files"], 0, "{doc}");
    assert_eq!(index["disagreements"], 1, "{doc}");
}
