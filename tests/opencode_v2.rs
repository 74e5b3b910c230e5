//! Stores of OpenCode's v2 runtime: conversations in `session_message` rows
//! (`tests/fixtures/opencode-v2/store.sql`, built from OpenCode's v2 DDL).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

fn store() -> PathBuf {
    repo("tests/fixtures/opencode-v2/store.sql")
}

fn session(id: &str) -> (i32, Vec<Value>) {
    let (code, doc) = diagnose_json(&store(), &["--session", id]);
    (code, findings(&doc))
}

fn rules(f: &[Value]) -> Vec<&str> {
    let mut r: Vec<&str> = f.iter().map(|f| f["rule"].as_str().unwrap()).collect();
    r.sort_unstable();
    r
}

#[test]
fn a_healthy_v2_session_is_clean() {
    let (code, f) = session("ses_v2_healthy");
    assert_eq!(code, 0, "{}", describe(&f));
    assert!(f.is_empty(), "{}", describe(&f));
}

#[test]
fn an_unanswered_v2_tool_call_is_reported_at_its_row() {
    let (code, f) = session("ses_v2_unanswered");
    assert_eq!(code, 1);
    assert_eq!(
        rules(&f),
        [
            "message-incomplete",
            "tool-never-finished",
            "tool-use-without-result"
        ]
    );
    for x in &f {
        assert_eq!(x["session_id"], "ses_v2_unanswered");
        assert_eq!(x["message_id"], "msg_u2");
        assert_eq!(
            x["locator"],
            "session ses_v2_unanswered › session_message msg_u2"
        );
    }
    let never = of_rule(&f, "tool-never-finished")[0];
    assert_eq!(never["part_id"], "msg_u2.content.0");
    // The v2 runtime sends the call without a result: Anthropic's 400.
    let pairing = of_rule(&f, "tool-use-without-result")[0];
    assert!(
        pairing["message"]
            .as_str()
            .unwrap()
            .contains("as OpenCode's v2 runtime sends it"),
        "{pairing}"
    );
}

#[test]
fn the_v2_request_starts_at_the_latest_compaction() {
    let out = rewind()
        .args(["request", "--session", "ses_v2_compacted"])
        .arg(store())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("msg_c3"), "{text}");
    assert!(
        !text.contains("msg_c1") && !text.contains("msg_c2"),
        "{text}"
    );
    assert!(text.contains("keeps Anthropic's rules"), "{text}");
}

#[test]
fn repair_plans_nothing_for_a_v2_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(&std::fs::read_to_string(store()).unwrap())
        .unwrap();
    drop(conn);
    let before = std::fs::read(&db).unwrap();
    let out = rewind()
        .args(["repair", "--dry-run"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c != 2), "{out:?}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not repaired: session ses_v2_unanswered: its 3 findings stay"),
        "{text}"
    );
    // …and the diagnosis does not promise the repair it will not make.
    let (_, f) = session("ses_v2_unanswered");
    let helps: Vec<&str> = f.iter().filter_map(|f| f["help"].as_str()).collect();
    assert!(
        helps
            .iter()
            .any(|h| h.starts_with("`rewind repair` leaves this")),
        "{helps:?}"
    );
    for h in helps {
        assert!(
            !h.contains("rewind repair") || h.starts_with("`rewind repair` leaves this"),
            "{h}"
        );
    }
}

#[test]
fn a_failed_v2_step_is_reported_and_still_sent() {
    let (code, f) = session("ses_v2_failed");
    assert_eq!(code, 1);
    assert_eq!(rules(&f), ["session-error"]);
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("Provider returned error 500"),
        "{}",
        f[0]["message"]
    );
    let out = rewind()
        .args(["request", "--session", "ses_v2_failed"])
        .arg(store())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("assistant  msg_f2"), "{text}");
    assert!(text.contains("for OpenAI"), "{text}");
}
