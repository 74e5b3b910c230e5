//! `rewind repair` on the OpenCode fixture databases: what it fixes, what it never touches, and
//! what happens when it is killed half-way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::opencode::*;
use common::*;
use serde_json::Value;

const FIXABLE: [&str; 6] = [
    "tool-never-finished",
    "step-unclosed",
    "step-merged",
    "empty-text-part",
    "message-incomplete",
    "tool-use-without-result",
];

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = build_db(&dir.path().join("opencode.db"), &sessions());
    (dir, path)
}

/// Every table's rows, as text, in a stable order.
fn dump(db: &Path) -> Vec<String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut out = Vec::new();
    for (table, key) in [
        ("session", "id"),
        ("message", "id"),
        ("part", "id"),
        ("event", "id"),
        ("event_sequence", "aggregate_id"),
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {key}"))
            .unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let mut s = String::from(table);
                for i in 0..n {
                    s.push('|');
                    s.push_str(&format!("{:?}", r.get_ref(i).unwrap()));
                }
                Ok(s)
            })
            .unwrap();
        out.extend(rows.map(|r| r.unwrap()));
    }
    out
}

fn integrity(db: &Path) -> String {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

fn repair(db: &Path, extra: &[&str]) -> (i32, Value) {
    let out = rewind()
        .args(["repair", "--format", "json"])
        .args(extra)
        .arg(db)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), doc)
}

fn backups(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".rewind-backup-"))
        .collect()
}

#[test]
fn repair_fixes_every_fixable_finding_and_touches_nothing_else() {
    let (dir, db) = fixture();
    let original = dump(&db);
    let healthy = opencode::session_rows(&db, "ses_healthy");

    // As 1.18.25 sends the requests, the merged step breaks Anthropic's pairing. (The empty
    // text part is dropped before any request: nothing to repair there.)
    let (code, doc) = repair(&db, &["--opencode-version", "1.18.25"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["applied"], true);
    let plan = doc["plan"].as_array().unwrap();
    let rules: Vec<&str> = plan.iter().map(|c| c["rule"].as_str().unwrap()).collect();
    for r in [
        "tool-never-finished",
        "schema-violation",
        "step-merged",
        "step-unclosed",
        "message-incomplete",
    ] {
        assert!(rules.contains(&r), "{r} planned: {rules:?}");
    }
    assert!(plan.iter().all(|c| c["session_id"] != "ses_healthy"));

    // Nothing fixable is left, for either provider's rules.
    for provider in ["anthropic", "openai"] {
        let (_, after) = diagnose_json(
            &db,
            &["--provider", provider, "--opencode-version", "1.18.25"],
        );
        let left: Vec<Value> = findings(&after)
            .into_iter()
            .filter(|f| FIXABLE.contains(&f["rule"].as_str().unwrap_or_default()))
            .collect();
        assert!(left.is_empty(), "{provider}: {}", describe(&left));
        let status: Vec<Value> = of_rule(&findings(&after), "schema-violation")
            .into_iter()
            .cloned()
            .collect();
        assert!(status.is_empty(), "{}", describe(&status));
    }
    assert_eq!(
        opencode::session_rows(&db, "ses_healthy"),
        healthy,
        "healthy rows changed"
    );
    assert_eq!(integrity(&db), "ok");

    // The backup equals the original.
    let b = backups(dir.path());
    assert_eq!(b.len(), 1);
    assert_eq!(dump(&b[0]), original);

    // The event log follows the changes.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (seq, max): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT seq FROM event_sequence WHERE aggregate_id = 'ses_crash'), (SELECT max(seq) FROM event WHERE aggregate_id = 'ses_crash')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(seq, max);
    assert!(seq > 5, "events appended: {seq}");

    // A second run changes nothing.
    let after_first = dump(&db);
    let (code, doc) = repair(&db, &[]);
    assert_eq!(code, 0);
    assert_eq!(doc["plan"].as_array().unwrap().len(), 0, "{doc}");
    assert_eq!(dump(&db), after_first);
    assert_eq!(
        backups(dir.path()).len(),
        1,
        "no backup when nothing changes"
    );
}

#[test]
fn pr_16751_rebuilds_into_valid_blocks_after_repair() {
    let (_dir, db) = fixture();
    repair(&db, &["--session", "ses_pr16751"]);
    let (_, doc) = diagnose_json(&db, &["--session", "ses_pr16751", "--provider", "both"]);
    let f = findings(&doc);
    assert!(
        of_rule(&f, "tool-use-without-result").is_empty(),
        "{}",
        describe(&f)
    );
    assert!(of_rule(&f, "step-merged").is_empty(), "{}", describe(&f));
}

#[test]
fn dry_run_writes_nothing() {
    let (dir, db) = fixture();
    let before = dir_state(dir.path());
    let (code, doc) = repair(&db, &["--dry-run"]);
    assert_eq!(code, 0);
    assert!(!doc["plan"].as_array().unwrap().is_empty());
    assert_eq!(dir_state(dir.path()), before);
}

#[test]
fn a_locked_database_is_refused() {
    let (dir, db) = fixture();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE; UPDATE session SET title = title;")
        .unwrap();
    let out = rewind().arg("repair").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("close OpenCode"), "{err}");
    conn.execute_batch("ROLLBACK").unwrap();
    assert!(backups(dir.path()).is_empty());
}

#[test]
fn killed_repairs_leave_the_original_or_the_repair() {
    let (_d, reference) = fixture();
    repair(&reference, &[]);
    let repaired_healthy = opencode::session_rows(&reference, "ses_healthy");
    for point in ["after-backup", "in-transaction", "before-commit"] {
        let (dir, db) = fixture();
        let original = dump(&db);
        let out = rewind()
            .env("REWIND_TEST_ABORT_AT", point)
            .arg("repair")
            .arg(&db)
            .output()
            .unwrap();
        assert_ne!(
            out.status.code(),
            Some(0),
            "{point}: the process was killed"
        );
        assert_eq!(integrity(&db), "ok", "{point}");
        let now = dump(&db);
        assert_eq!(now, original, "{point}: a killed repair left the original");
        assert_eq!(opencode::session_rows(&db, "ses_healthy"), repaired_healthy);
        let b = backups(dir.path());
        assert_eq!(b.len(), 1, "{point}");
        assert_eq!(dump(&b[0]), original, "{point}: backup equals the original");
        // And a repair afterwards completes.
        let (code, _) = repair(&db, &[]);
        assert_eq!(code, 0, "{point}");
    }
}

#[test]
fn exports_get_a_repaired_copy_next_to_them() {
    let (dir, db) = fixture();
    drop(db);
    let path = dir.path().join("session.json");
    let export = serde_json::json!({"info": {"id": "ses_x", "version": "1.18.33"}, "messages": [
        {"info": {"id": "msg_1", "role": "user", "time": {"created": T0}, "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude"}},
         "parts": [{"id": "prt_1", "type": "text", "text": "hi"}]},
        {"info": {"id": "msg_2", "role": "assistant", "time": {"created": T0}, "parentID": "msg_1", "modelID": "claude", "providerID": "anthropic", "mode": "build", "path": {"cwd": "/", "root": "/"}, "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         "parts": [{"id": "prt_2", "type": "step-start"}, {"id": "prt_3", "type": "tool", "tool": "bash", "callID": "c1", "state": {"status": "pending", "input": {}, "raw": ""}}]}
    ]});
    let text = serde_json::to_string_pretty(&export).unwrap();
    std::fs::write(&path, &text).unwrap();
    let out = rewind().arg("repair").arg(&path).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("opencode session delete ses_x"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "never overwritten"
    );
    let copy = dir.path().join("session.repaired.json");
    let (_, doc) = diagnose_json(&copy, &[]);
    let left: Vec<Value> = findings(&doc)
        .into_iter()
        .filter(|f| FIXABLE.contains(&f["rule"].as_str().unwrap_or_default()))
        .collect();
    assert!(left.is_empty(), "{}", describe(&left));
}
