//! Compactions: what the rebuilt request keeps (OpenCode's `filterCompacted` with a retained
//! tail, the v2 runtime's latest compaction row), what is said about messages it no longer
//! sends, and the tool pairing of a compacted history.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::Value;

fn request_rows(store: &str, extra: &[&str]) -> Vec<String> {
    let out = rewind()
        .args(["request"])
        .args(extra)
        .arg(repo(store))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            w.next()?.parse::<u32>().ok()?;
            w.next()?;
            w.next()
                .filter(|id| id.starts_with("msg_"))
                .and_then(|id| id.get(..16))
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn a_retained_tail_is_sent_after_the_summary_and_keeps_its_pairs() {
    let store = repo("tests/fixtures/compaction/tail-healthy.json");
    let (code, doc) = diagnose_json(&store, &[]);
    assert_eq!(code, 0, "{}", describe(&findings(&doc)));
    assert!(findings(&doc).is_empty());
    // [compaction, summary, tail (msg 3, 4), newer (7, 8)]; messages 1 and 2 are left out.
    let fixture = "tests/fixtures/compaction/tail-healthy.json";
    assert_eq!(
        request_rows(fixture, &[]),
        [
            "msg_c5e0b0000005",
            "msg_c5e0b0000006",
            "msg_c5e0b0000003",
            "msg_c5e0b0000004",
            "msg_c5e0b0000004",
            "msg_c5e0b0000008"
        ]
    );
    // 1.14.34 sends the tail where it is stored; 1.3 keeps no tail.
    assert_eq!(
        request_rows(fixture, &["--opencode-version", "1.14.34"]),
        [
            "msg_c5e0b0000003",
            "msg_c5e0b0000004",
            "msg_c5e0b0000004",
            "msg_c5e0b0000006",
            "msg_c5e0b0000007",
            "msg_c5e0b0000008"
        ]
    );
    assert_eq!(
        request_rows(fixture, &["--opencode-version", "1.3.2"]),
        [
            "msg_c5e0b0000005",
            "msg_c5e0b0000006",
            "msg_c5e0b0000007",
            "msg_c5e0b0000008"
        ]
    );
}

#[test]
fn findings_before_the_compaction_say_it_and_are_one_level_lower() {
    let store = repo("tests/fixtures/compaction/broken-before-compaction.json");
    let (code, doc) = diagnose_json(&store, &[]);
    assert_eq!(code, 0);
    let f = findings(&doc);
    let mut got: Vec<(&str, &str)> = f
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    got.sort_unstable();
    assert_eq!(
        got,
        [
            ("message-incomplete", "info"),
            ("step-unclosed", "warning"),
            ("tool-never-finished", "warning"),
        ]
    );
    for x in &f {
        let notes: Vec<&str> = x["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            notes.contains(
                &"this message is before the compaction at msg_c5e0b0000005Aa1Bb2Cc3Dd and is no longer sent to the model"
            ),
            "{notes:?}"
        );
    }
}

#[test]
fn a_v2_compaction_leaves_out_the_rows_before_it() {
    let store = repo("tests/fixtures/opencode-v2/store.sql");
    let (_, doc) = diagnose_json(&store, &["--session", "ses_v2_compacted"]);
    let f = findings(&doc);
    assert_eq!(f.len(), 2, "{}", describe(&f));
    for x in &f {
        assert_eq!(x["message_id"], "msg_c2");
        assert_ne!(x["severity"], "error");
        assert!(
            x["notes"].to_string().contains("compaction at msg_c3"),
            "{x}"
        );
    }
}

#[test]
fn a_tail_that_starts_with_an_orphan_result_breaks_the_pairing() {
    let store = repo("tests/fixtures/compaction/orphan-result-after-compaction.json");
    let (code, doc) = diagnose_json(&store, &[]);
    assert_eq!(code, 1);
    let f = findings(&doc);
    assert_eq!(f.len(), 1, "{}", describe(&f));
    assert_eq!(f[0]["rule"], "tool-result-orphaned");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("unexpected `tool_use_id` found in `tool_result` blocks: toolu_01Ab"),
        "{}",
        f[0]["message"]
    );
}
