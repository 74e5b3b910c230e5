//! Acceptance test: the OpenCode 1.18 database dump of `../shared/corpus/opencode/`, loaded into
//! a temporary database and diagnosed as `../shared/corpus/EXPECTED.md` says. Without the corpus
//! this test is reported as ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

fn corpus_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let sql = std::fs::read_to_string(corpus().join("opencode/opencode-1.18-multi-session.sql"))
        .expect("read the dump");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opencode.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&sql)
        .unwrap();
    (dir, path)
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn multi_session_dump() {
    let (dir, db) = corpus_db();
    let before = opencode::dir_state(dir.path());
    let (code, doc) = diagnose_json(&db, &[]);
    assert_eq!(code, 1);
    let f = findings(&doc);
    let about = |rule: &str, key: &str, id: &str| -> Vec<Value> {
        of_rule(&f, rule)
            .into_iter()
            .filter(|x| x[key] == id)
            .cloned()
            .collect()
    };

    // msg_fixtureA0003: no step-start; text prt_fixture0010 after tool prt_fixture0009 (call_3).
    // The store was written by 1.18.33, whose `@ai-sdk/anthropic` sends the step as
    // `[text, tool_use]`: a well-formed request (the real client does, against a scripted
    // provider), so neither rule fires.
    assert!(
        about("step-merged", "message_id", "msg_fixtureA0003").is_empty(),
        "{}",
        describe(&f)
    );
    assert!(
        about("tool-use-without-result", "message_id", "msg_fixtureA0003").is_empty(),
        "{}",
        describe(&f)
    );
    // As 1.18.25 and older send it, the text stays after the `tool_use`: Anthropic answers 400.
    let (code, old) = diagnose_json(&db, &["--opencode-version", "1.18.25"]);
    assert_eq!(code, 1);
    let old = findings(&old);
    let about_old = |rule: &str| -> Vec<Value> {
        of_rule(&old, rule)
            .into_iter()
            .filter(|x| x["message_id"] == "msg_fixtureA0003")
            .cloned()
            .collect()
    };
    let merged = about_old("step-merged");
    assert_eq!(merged.len(), 1, "{}", describe(&old));
    assert_eq!(merged[0]["part_id"], "prt_fixture0010");
    assert_eq!(merged[0]["call_id"], "call_3");
    assert_eq!(merged[0]["session_id"], "ses_fixtureA001");
    let pairing = about_old("tool-use-without-result");
    assert_eq!(pairing.len(), 1, "{}", describe(&old));
    let m = pairing[0]["message"].as_str().unwrap();
    assert!(
        m.contains("Anthropic")
            && m.contains("without `tool_result` blocks immediately after: call_3"),
        "{m}"
    );

    // msg_fixtureB0004: an assistant message that never finished.
    let incomplete = about("message-incomplete", "message_id", "msg_fixtureB0004");
    assert_eq!(incomplete.len(), 1, "{}", describe(&f));
    assert_eq!(incomplete[0]["session_id"], "ses_fixtureB001");

    // prt_fixture0006 is a genuine tool failure, correctly recorded.
    let about_0006: Vec<&Value> = f
        .iter()
        .filter(|x| x["part_id"] == "prt_fixture0006")
        .collect();
    assert!(about_0006.is_empty(), "{}", describe(&f));

    // Nothing about the healthy child session and fork.
    for s in ["ses_fixtureA002", "ses_fixtureA003"] {
        let bad: Vec<Value> = f.iter().filter(|x| x["session_id"] == s).cloned().collect();
        assert!(bad.is_empty(), "{s}: {}", describe(&bad));
    }
    assert_eq!(
        opencode::dir_state(dir.path()),
        before,
        "diagnose wrote to the directory"
    );
}
