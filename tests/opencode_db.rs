//! OpenCode databases: fixtures built from OpenCode's own DDL, diagnosed by the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::opencode::*;
use common::*;
use serde_json::Value;

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = build_db(&dir.path().join("opencode.db"), &sessions());
    (dir, path)
}

fn session_findings(db: &Path, session: &str) -> Vec<Value> {
    let (code, doc) = diagnose_json(db, &["--session", session]);
    assert!(code == 0 || code == 1, "exit {code}");
    findings(&doc)
}

fn rules(f: &[Value]) -> Vec<String> {
    let mut r: Vec<String> = f
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect();
    r.sort();
    r
}

#[test]
fn pr_16751_message_is_merged_steps_and_a_dropped_error() {
    let (_dir, db) = fixture();
    // The store says 1.18.33: its `@ai-sdk/anthropic` moves the `tool_use` blocks after the
    // text, the request is well-formed, and only the dropped error is left.
    let f = session_findings(&db, "ses_pr16751");
    assert_eq!(rules(&f), ["tool-error-dropped"], "{}", describe(&f));
    // As 1.18.25 and older send it, the text after the `tool_use` breaks Anthropic's pairing.
    let (code, doc) = diagnose_json(
        &db,
        &["--session", "ses_pr16751", "--opencode-version", "1.18.25"],
    );
    assert_eq!(code, 1);
    let f = findings(&doc);
    assert_eq!(
        rules(&f),
        [
            "step-merged",
            "tool-error-dropped",
            "tool-use-without-result"
        ],
        "{}",
        describe(&f)
    );
    let merged = &of_rule(&f, "step-merged")[0];
    assert_eq!(merged["session_id"], "ses_pr16751");
    assert_eq!(merged["message_id"], msg_id(11));
    assert_eq!(merged["part_id"], prt_id(11, 3), "the text after the tool");
    assert_eq!(merged["call_id"], "toolu_01Aborted");
    assert_eq!(merged["file"], db.display().to_string());
    assert!(merged["locator"].as_str().unwrap().contains(&msg_id(11)));
    assert!(merged.get("line").is_none(), "rows have no line numbers");
    let dropped = &of_rule(&f, "tool-error-dropped")[0];
    assert_eq!(dropped["part_id"], prt_id(11, 2));
    let pairing = &of_rule(&f, "tool-use-without-result")[0];
    assert!(
        pairing["message"].as_str().unwrap().contains(
            "Anthropic answers 400: \"messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01Aborted."
        ),
        "{}",
        pairing["message"]
    );
}

#[test]
fn each_corruption_is_reported_with_its_rule_and_ids() {
    let (_dir, db) = fixture();
    let crash = session_findings(&db, "ses_crash");
    assert_eq!(
        rules(&crash),
        ["message-incomplete", "step-unclosed", "tool-never-finished"],
        "{}",
        describe(&crash)
    );
    let stuck = &of_rule(&crash, "tool-never-finished")[0];
    assert_eq!(stuck["part_id"], prt_id(21, 2));
    assert_eq!(stuck["call_id"], "toolu_03Pending");
    assert_eq!(
        of_rule(&crash, "message-incomplete")[0]["message_id"],
        msg_id(21)
    );

    let failed = session_findings(&db, "ses_failed");
    assert_eq!(
        rules(&failed),
        ["schema-violation"],
        "{}",
        describe(&failed)
    );
    assert_eq!(failed[0]["part_id"], prt_id(31, 1));
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("\"failed\"")
    );

    // A whitespace-only text block is sent as it is (an empty one would be dropped).
    let empty = session_findings(&db, "ses_empty");
    assert_eq!(rules(&empty), ["empty-text-part"], "{}", describe(&empty));

    let dup = session_findings(&db, "ses_dup");
    assert!(
        rules(&dup).contains(&"tool-call-duplicate".to_owned()),
        "{}",
        describe(&dup)
    );
    let d = &of_rule(&dup, "tool-call-duplicate")[0];
    assert_eq!(d["part_id"], prt_id(51, 2));
    assert_eq!(d["call_id"], "toolu_05Twice");

    let healthy = session_findings(&db, "ses_healthy");
    assert!(healthy.is_empty(), "{}", describe(&healthy));
}

#[test]
fn diagnosing_changes_nothing_on_disk() {
    let (dir, db) = fixture();
    let before = dir_state(dir.path());
    rewind().arg("diagnose").arg(&db).assert().code(1);
    rewind().arg("sessions").arg(&db).assert().code(0);
    assert_eq!(
        dir_state(dir.path()),
        before,
        "database or directory changed"
    );
}

/// A database whose newest rows are only in its `-wal` (OpenCode running, or killed).
fn wal_copy(with_shm: bool) -> (tempfile::TempDir, PathBuf) {
    let src = tempfile::tempdir().unwrap();
    let db = build_db(&src.path().join("opencode.db"), &sessions()[5..]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    conn.execute(
        "UPDATE part SET data = json_set(data, '$.state.status', 'running') WHERE data LIKE '%toolu_06Fine%'",
        [],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal", "-shm"] {
        if suffix == "-shm" && !with_shm {
            continue;
        }
        let from = PathBuf::from(format!("{}{suffix}", db.display()));
        std::fs::copy(&from, dir.path().join(format!("opencode.db{suffix}"))).unwrap();
    }
    drop(conn);
    let path = dir.path().join("opencode.db");
    (dir, path)
}

#[test]
fn wal_contents_are_read_and_nothing_is_written() {
    for with_shm in [true, false] {
        let (dir, db) = wal_copy(with_shm);
        assert!(dir.path().join("opencode.db-wal").exists());
        let before = dir_state(dir.path());
        let (code, doc) = diagnose_json(&db, &[]);
        assert_eq!(code, 1, "shm {with_shm}");
        let f = findings(&doc);
        assert_eq!(
            of_rule(&f, "tool-never-finished").len(),
            1,
            "the write only in the WAL is seen (shm {with_shm}): {}",
            describe(&f)
        );
        assert_eq!(
            dir_state(dir.path()),
            before,
            "shm {with_shm}: files changed"
        );
    }
}

/// adversarial #10: a database named through a symbolic link is read with the `-wal` beside the
/// file the link points to, by every command, so that the plan of `repair --dry-run` is the one
/// `repair` applies.
#[test]
#[cfg(unix)]
fn a_wal_database_through_a_symlink_is_read_with_its_wal() {
    for with_shm in [true, false] {
        let (dir, db) = wal_copy(with_shm);
        let links = tempfile::tempdir().unwrap();
        let link = links.path().join("linked.db");
        std::os::unix::fs::symlink(&db, &link).unwrap();
        let before = dir_state(dir.path());
        let (code, doc) = diagnose_json(&link, &[]);
        assert_eq!(code, 1, "shm {with_shm}");
        let f = findings(&doc);
        assert_eq!(
            of_rule(&f, "tool-never-finished").len(),
            1,
            "diagnose through the link sees the write only in the WAL (shm {with_shm}): {}",
            describe(&f)
        );
        let listed = |path: &Path| {
            let out = rewind()
                .args(["sessions", "--format", "json"])
                .arg(path)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            doc["sessions"].to_string()
        };
        assert_eq!(listed(&link), listed(&db), "sessions (shm {with_shm})");
        let plan = |path: &Path| {
            let out = rewind()
                .args(["repair", "--dry-run", "--force", "--format", "json"])
                .arg(path)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            doc["plan"].to_string()
        };
        assert_eq!(plan(&link), plan(&db), "repair --dry-run (shm {with_shm})");
        assert_eq!(
            dir_state(dir.path()),
            before,
            "shm {with_shm}: files changed"
        );
        assert_eq!(std::fs::read_dir(links.path()).unwrap().count(), 1);
    }
}

#[test]
fn works_while_another_connection_has_it_open() {
    let (dir, db) = fixture();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute(
        "UPDATE session SET title = 'live' WHERE id = 'ses_healthy'",
        [],
    )
    .unwrap();
    let out = rewind()
        .args(["sessions", "--format", "json"])
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
    let titles: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains(&"live"), "{titles:?}");
    drop(conn);
    drop(dir);
}

fn error_of(path: &Path) -> String {
    let out = rewind().arg("diagnose").arg(path).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(&path.display().to_string()),
        "names the path: {err}"
    );
    err
}

#[test]
fn bad_databases_get_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // A SQLite header followed by garbage.
    let garbage = dir.path().join("garbage.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend(std::iter::repeat_n(0xAB_u8, 4096));
    std::fs::write(&garbage, &bytes).unwrap();
    let e = error_of(&garbage);
    assert!(e.contains("SQLite:"), "{e}");

    // A database without OpenCode's tables.
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (a);")
        .unwrap();
    let e = error_of(&other);
    assert!(e.contains("tables session, message, part missing"), "{e}");

    // A v2-only store whose `session_message` lacks a column rewind reads.
    let v2 = dir.path().join("v2.db");
    rusqlite::Connection::open(&v2)
        .unwrap()
        .execute_batch("CREATE TABLE session (id text); CREATE TABLE session_message (id text, session_id text, type text, seq integer);")
        .unwrap();
    let e = error_of(&v2);
    assert!(e.contains("`session_message` has no column `data`"), "{e}");

    // Corrupt pages.
    let corrupt = dir.path().join("corrupt.db");
    build_db(&corrupt, &sessions());
    let mut bytes = std::fs::read(&corrupt).unwrap();
    for b in bytes.iter_mut().skip(4096).take(8192) {
        *b = 0x5A;
    }
    std::fs::write(&corrupt, &bytes).unwrap();
    let e = error_of(&corrupt);
    assert!(e.contains("corrupt") || e.contains("malformed"), "{e}");

    // Unknown session.
    let (_d, db) = fixture();
    let out = rewind()
        .args(["diagnose", "--session", "ses_nope"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no session ses_nope"));
}

#[test]
fn version_decides_how_pending_tools_are_sent() {
    let dir = tempfile::tempdir().unwrap();
    // A pending tool followed by text in the same step: OpenCode ≥ 1.1 sends the call (with an
    // interrupted result) and the text after it; 1.0 drops the call.
    let s = Ses {
        id: "ses_v",
        title: "v",
        messages: exchange(
            70,
            vec![
                step_start(),
                tool(
                    "bash",
                    "toolu_07",
                    serde_json::json!({"status": "running", "input": {"command": "ls"}, "time": {"start": T0}}),
                ),
                text("after"),
            ],
            true,
        ),
    };
    let old = build_db_1_2(&dir.path().join("old.db"), &[s]);
    let (_, doc) = diagnose_json(&old, &["--opencode-version", "1.0.185"]);
    let f = findings(&doc);
    assert!(
        of_rule(&f, "tool-use-without-result").is_empty(),
        "{}",
        describe(&f)
    );
    // The call is not sent, so nothing follows a `tool_use`: the request is well-formed.
    assert!(of_rule(&f, "step-merged").is_empty(), "{}", describe(&f));
    let (_, doc) = diagnose_json(&old, &["--opencode-version", "1.18.0"]);
    let f = findings(&doc);
    assert_eq!(
        of_rule(&f, "tool-use-without-result").len(),
        1,
        "{}",
        describe(&f)
    );
}

#[test]
fn empty_text_is_reported_only_where_it_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut with_metadata = text("");
    with_metadata["metadata"] = serde_json::json!({"openai": {"itemId": "msg_1"}});
    let ses = |id: &'static str, first: i64, part: Value| Ses {
        id,
        title: id,
        messages: exchange(first, vec![step_start(), part, step_finish()], true),
    };
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[
            ses("ses_blank", 80, text(" \n")),
            ses("ses_meta", 82, with_metadata),
            ses("ses_plain", 84, text("")),
        ],
    );
    // Whitespace is sent as it is: Anthropic rejects it.
    let blank = session_findings(&db, "ses_blank");
    assert_eq!(rules(&blank), ["empty-text-part"], "{}", describe(&blank));
    assert_eq!(blank[0]["part_id"], prt_id(81, 1));
    // Empty text with provider metadata: dropped for Anthropic, sent to OpenAI, which takes
    // an empty content (the real OpenCode's OpenAI-compatible requests carry `"content": ""`).
    assert!(session_findings(&db, "ses_meta").is_empty());
    let (_, doc) = diagnose_json(&db, &["--session", "ses_meta", "--provider", "openai"]);
    let meta = findings(&doc);
    assert!(meta.is_empty(), "{}", describe(&meta));
    // Whitespace to OpenAI: accepted too.
    let (_, doc) = diagnose_json(&db, &["--session", "ses_blank", "--provider", "openai"]);
    let blank = findings(&doc);
    assert!(blank.is_empty(), "{}", describe(&blank));
    // Empty text without it: the AI SDK drops it for every provider.
    for provider in ["anthropic", "openai"] {
        let (_, doc) = diagnose_json(&db, &["--session", "ses_plain", "--provider", provider]);
        let plain = findings(&doc);
        assert!(plain.is_empty(), "{provider}: {}", describe(&plain));
    }
}

/// A session whose reply ended with `error` stored on the message.
fn errored(id: &'static str, first: i64, error: Value, parts: Vec<Value>) -> Ses {
    let mut messages = exchange(first, parts, false);
    messages[1].info["error"] = error;
    messages[1].info["time"]["completed"] = serde_json::json!(T0 + (first + 1) * 1000 + 500);
    Ses {
        id,
        title: id,
        messages,
    }
}

fn parse_error(text: &str) -> Value {
    serde_json::json!({"name": "UnknownError", "data": {"message": format!(
        "JSON parsing failed: Text: {text}.\nError message: JSON Parse error: Unable to parse JSON string"
    )}})
}

#[test]
fn stored_errors_are_reported_as_a_log_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = |s: &str| {
        format!(r#"{{"id":"chatcmpl-1","choices":[{{"index":0,"delta":{{"content":"{s}"}}}}]}}"#)
    };
    let partial = || vec![step_start(), text("Hello ")];
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[
            // Two events on one line, the second with its `data:` field.
            errored(
                "ses_concat",
                90,
                parse_error(&format!("{}data: {}", chunk("Hello "), chunk("world."))),
                partial(),
            ),
            // Two JSON values back to back.
            errored(
                "ses_backtoback",
                92,
                parse_error(&format!("{}{}", chunk("Hello "), chunk("world."))),
                partial(),
            ),
            // One event cut short: unparseable, but not two events.
            errored(
                "ses_cut",
                94,
                parse_error(r#"{"id":"chatcmpl-1","choi"#),
                partial(),
            ),
            errored(
                "ses_overloaded",
                96,
                serde_json::json!({"name": "APIError", "data": {"message": "Overloaded", "isRetryable": true}}),
                partial(),
            ),
        ],
    );
    for id in ["ses_concat", "ses_backtoback"] {
        let f = session_findings(&db, id);
        let r = rules(&f);
        for rule in [
            "session-error",
            "sse-concatenated-events",
            "stream-error-fatal",
        ] {
            assert!(r.contains(&rule.to_owned()), "{id}: {}", describe(&f));
        }
        let session = &of_rule(&f, "session-error")[0];
        assert_eq!(session["severity"], "error");
        assert!(
            session["message"]
                .as_str()
                .unwrap()
                .contains("JSON parsing failed")
        );
    }
    let cut = rules(&session_findings(&db, "ses_cut"));
    assert!(cut.contains(&"stream-error-fatal".to_owned()), "{cut:?}");
    assert!(
        !cut.contains(&"sse-concatenated-events".to_owned()),
        "{cut:?}"
    );
    let overloaded = session_findings(&db, "ses_overloaded");
    let e = &of_rule(&overloaded, "session-error")[0];
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("APIError (retryable): Overloaded"),
        "{}",
        describe(&overloaded)
    );
    assert!(of_rule(&overloaded, "stream-error-fatal").is_empty());
}

#[test]
fn a_user_abort_is_no_finding_and_the_summary_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let abort = serde_json::json!({"name": "MessageAbortedError", "data": {"message": "Aborted"}});
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[errored(
            "ses_abort",
            98,
            abort,
            vec![step_start(), text("Working on it")],
        )],
    );
    let f = session_findings(&db, "ses_abort");
    assert!(f.is_empty(), "{}", describe(&f));
    let (code, doc) = diagnose_json(&db, &[]);
    assert_eq!(code, 0);
    assert_eq!(
        doc["files"][0]["sessions"][0]["stopped_by_user"], 1,
        "{doc}"
    );
    // Wide enough for the table's cells to keep their words on one line.
    let human = rewind()
        .env("COLUMNS", "240")
        .arg("diagnose")
        .arg(&db)
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("(1 reply stopped by the user)"), "{human}");
    // An interrupted step with no abort recorded stays an error.
    let crash = session_findings(&fixture().1, "ses_crash");
    assert_eq!(of_rule(&crash, "step-unclosed")[0]["severity"], "error");
}

#[test]
fn an_openai_compatible_session_gets_openai_rules_only() {
    let dir = tempfile::tempdir().unwrap();
    // A step [tool, text] of a custom OpenAI-compatible provider, stored by 1.18.25: the text
    // and the call share one assistant message, which OpenAI accepts.
    let mut messages = exchange(
        100,
        vec![
            step_start(),
            tool(
                "bash",
                "call_1",
                completed(serde_json::json!({"command": "ls"}), "a\n"),
            ),
            text("Listed."),
            step_finish(),
        ],
        true,
    );
    messages[0].info["model"] = serde_json::json!({"providerID": "mock", "modelID": "mock-model"});
    messages[1].info["providerID"] = serde_json::json!("mock");
    messages[1].info["modelID"] = serde_json::json!("mock-model");
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[Ses {
            id: "ses_compat",
            title: "compat",
            messages,
        }],
    );
    let (_, doc) = diagnose_json(&db, &["--opencode-version", "1.18.25"]);
    let f = findings(&doc);
    assert!(f.is_empty(), "{}", describe(&f));
    // Anthropic's rules, asked for, still see the text after the `tool_use`.
    let (_, doc) = diagnose_json(
        &db,
        &["--opencode-version", "1.18.25", "--provider", "anthropic"],
    );
    let f = findings(&doc);
    assert_eq!(
        rules(&f),
        ["step-merged", "tool-use-without-result"],
        "{}",
        describe(&f)
    );
}

#[test]
fn a_reply_cut_by_a_dropped_connection_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    // What OpenCode 1.18.33 stores when the connection drops mid-text: reason `unknown`, no usage.
    let unknown = serde_json::json!({"type": "step-finish", "reason": "unknown", "cost": 0,
        "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}});
    let stop_no_usage = serde_json::json!({"type": "step-finish", "reason": "stop", "cost": 0,
        "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}});
    let ses = |id: &'static str, first: i64, parts: Vec<Value>| Ses {
        id,
        title: id,
        messages: exchange(first, parts, true),
    };
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[
            ses(
                "ses_cut",
                110,
                vec![step_start(), text("Half a sen"), unknown.clone()],
            ),
            // The same finish after a whole sentence, after a tool call only, or with a reason.
            ses(
                "ses_whole",
                112,
                vec![step_start(), text("All done."), unknown.clone()],
            ),
            ses(
                "ses_tool",
                114,
                vec![
                    step_start(),
                    tool(
                        "bash",
                        "call_1",
                        completed(serde_json::json!({"command": "ls"}), "a"),
                    ),
                    unknown,
                ],
            ),
            ses(
                "ses_echo",
                116,
                vec![step_start(), text("Half a sen"), stop_no_usage],
            ),
        ],
    );
    let cut = session_findings(&db, "ses_cut");
    assert_eq!(rules(&cut), ["reply-truncated"], "{}", describe(&cut));
    assert_eq!(cut[0]["part_id"], prt_id(111, 1));
    for id in ["ses_whole", "ses_tool", "ses_echo"] {
        let f = session_findings(&db, id);
        assert!(
            of_rule(&f, "reply-truncated").is_empty(),
            "{id}: {}",
            describe(&f)
        );
    }
}

fn human(dir: &Path, session: &str) -> String {
    // As 1.18.25 sends the requests: the merged step of ses_pr16751 breaks Anthropic's pairing.
    let out = rewind()
        .current_dir(dir)
        .args(["diagnose", "opencode.db", "--session", session])
        .args(["--opencode-version", "1.18.25"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn snapshots_of_the_rendered_diagnostics() {
    let (dir, _db) = fixture();
    for s in [
        "ses_pr16751",
        "ses_crash",
        "ses_failed",
        "ses_empty",
        "ses_dup",
        "ses_healthy",
    ] {
        insta::assert_snapshot!(s, human(dir.path(), s));
    }
}

/// Many sessions, their parts stored out of id order: every session is replayed with its parts
/// in id order (as OpenCode reads them), and the findings come out in session order although
/// sessions are replayed in parallel.
#[test]
fn parts_stored_out_of_order_and_many_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<&'static str> = (0..40)
        .map(|i| &*Box::leak(format!("ses_many{i:03}").into_boxed_str()))
        .collect();
    let sessions: Vec<Ses> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            // Every third session died mid-step; the others are healthy.
            let parts = if i % 3 == 0 {
                vec![step_start(), text("Working.")]
            } else {
                vec![step_start(), text("Done."), step_finish()]
            };
            Ses {
                id,
                title: "many",
                messages: exchange(10 + 2 * i as i64, parts, i % 3 != 0),
            }
        })
        .collect();
    let db = build_db(&dir.path().join("opencode.db"), &sessions);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE p2 AS SELECT * FROM part ORDER BY id DESC;
         DELETE FROM part; INSERT INTO part SELECT * FROM p2; DROP TABLE p2;",
    )
    .unwrap();
    drop(conn);
    let (code, doc) = diagnose_json(&db, &[]);
    assert_eq!(code, 1);
    let unclosed: Vec<String> = of_rule(&findings(&doc), "step-unclosed")
        .iter()
        .map(|f| f["session_id"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = ids.iter().step_by(3).map(|s| s.to_string()).collect();
    assert_eq!(unclosed, expected, "{}", describe(&findings(&doc)));
}

/// A row nested far deeper than any JSON parser recurses is reported, not a crash.
#[test]
fn a_deeply_nested_row_is_undecodable_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[Ses {
            id: "ses_deep",
            title: "deep",
            messages: exchange(10, vec![step_start(), text("x"), step_finish()], true),
        }],
    );
    let deep = format!(
        r#"{{"type":"tool","tool":"b","callID":"c","state":{{"status":"pending","input":{{"a":{}1{}}}}}}}"#,
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE part SET data = ?1 WHERE id = ?2",
        rusqlite::params![deep, prt_id(11, 1)],
    )
    .unwrap();
    drop(conn);
    let (code, doc) = diagnose_json(&db, &[]);
    // A warning: the exit status stays 0 under the default `--fail-on error`.
    assert_eq!(code, 0);
    let all = findings(&doc);
    assert_eq!(
        of_rule(&all, "undecodable-record").len(),
        1,
        "{}",
        describe(&all)
    );
}

#[test]
fn a_retried_attempt_is_no_unclosed_step() {
    let dir = tempfile::tempdir().unwrap();
    // OpenCode retries a stream that failed before any tool ran in the same message: the
    // attempt's step-start and partial text stay, then a step that finishes.
    let ses = |id: &'static str, first: i64, parts: Vec<Value>, completed: bool| Ses {
        id,
        title: id,
        messages: exchange(first, parts, completed),
    };
    let db = build_db(
        &dir.path().join("opencode.db"),
        &[
            ses(
                "ses_retried",
                110,
                vec![
                    step_start(),
                    text("Partial "),
                    step_start(),
                    text("The whole answer."),
                    step_finish(),
                ],
                true,
            ),
            // The closest case that is an interruption: no step after the attempt finished.
            ses(
                "ses_cut",
                112,
                vec![step_start(), text("Partial "), step_start(), text("Again")],
                false,
            ),
        ],
    );
    let retried = session_findings(&db, "ses_retried");
    assert!(
        of_rule(&retried, "step-unclosed").is_empty(),
        "{}",
        describe(&retried)
    );
    let cut = session_findings(&db, "ses_cut");
    assert_eq!(
        of_rule(&cut, "step-unclosed").len(),
        2,
        "{}",
        describe(&cut)
    );
}
