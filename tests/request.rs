//! `rewind request`: the request rebuilt from a stored session, block by block, with the provider
//! rules it breaks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::opencode::*;
use common::*;
use serde_json::Value;

const MERGED: &str = "tests/fixtures/checks/step-merged.json";
const MERGED_CLEAN: &str = "tests/fixtures/rules/step-merged.clean.json";

/// Runs `rewind request` and returns its exit code, standard output and standard error.
fn request(store: &Path, extra: &[&str]) -> (i32, String, String) {
    // From the repository, so that fixture paths show relative in the snapshots.
    let out = rewind()
        .current_dir(repo("."))
        .arg("request")
        .arg(store)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn request_json(store: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = request(store, &args);
    assert_eq!(code, 0, "{stderr}");
    let mut doc: Value = serde_json::from_str(&stdout).unwrap();
    // The envelope names rewind's version: kept out of snapshots.
    assert_eq!(doc["version"], 1);
    doc["tool"]["version"] = "[version]".into();
    doc
}

/// `(role, [block types])` of each message.
fn shape(doc: &Value) -> Vec<(String, Vec<String>)> {
    doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let blocks = m["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["type"].as_str().unwrap().to_owned())
                .collect();
            (m["role"].as_str().unwrap().to_owned(), blocks)
        })
        .collect()
}

#[test]
fn merged_steps_put_text_after_tool_use() {
    let (code, human, _) = request(Path::new(MERGED), &[]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("step-merged.human", human);
    let doc = request_json(&repo(MERGED), &[]);
    insta::assert_json_snapshot!("step-merged.json", doc);
    assert_eq!(doc["provider"], "anthropic");
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1);
    // The marker is on the text that follows the tool_use in the same assistant message.
    let p = &problems[0];
    let block = &doc["messages"][p["message_index"].as_u64().unwrap() as usize]["blocks"]
        [p["block_index"].as_u64().unwrap() as usize];
    assert_eq!(block["type"], "text");
    assert_eq!(block["part_id"], p["part_id"]);
    assert!(
        p["error"]
            .as_str()
            .unwrap()
            .starts_with("messages.2: `tool_use` ids were found without `tool_result` blocks")
    );
}

#[test]
fn the_healthy_twin_keeps_the_rules() {
    let (code, human, _) = request(Path::new(MERGED_CLEAN), &[]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("step-merged.clean.human", human);
    assert!(!human.contains('✗'), "{human}");
    let doc = request_json(&repo(MERGED_CLEAN), &[]);
    assert_eq!(doc["problems"], serde_json::json!([]));
    assert_eq!(
        shape(&doc)
            .iter()
            .map(|(r, _)| r.as_str())
            .collect::<Vec<_>>(),
        ["user", "assistant", "user", "assistant"]
    );
}

#[test]
fn openai_keeps_tool_messages_apart() {
    let doc = request_json(&repo(MERGED), &["--provider", "openai"]);
    assert_eq!(doc["provider"], "openai");
    // The AI SDK's messages, ungrouped: the tool results in a `tool` message of their own, and
    // each assistant message's calls after its content, as `tool_calls` come on the wire.
    assert_eq!(
        shape(&doc),
        [
            ("user".into(), vec!["text".into()]),
            (
                "assistant".into(),
                vec!["text".into(), "text".into(), "tool_use".into()]
            ),
            ("tool".into(), vec!["tool_result".into()]),
        ]
    );
    // OpenAI pairs calls and outputs by id: the order that breaks Anthropic is accepted.
    assert_eq!(doc["problems"], serde_json::json!([]));
}

#[test]
fn unknown_session_is_a_usage_error() {
    let (code, stdout, stderr) = request(&repo(MERGED), &["--session", "ses_nope"]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(stderr.contains("has no session ses_nope"), "{stderr}");
}

#[test]
fn not_a_store_is_a_usage_error() {
    let (code, _, stderr) = request(&repo("samples/step-without-finish.log"), &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not an OpenCode session store"), "{stderr}");
}

#[test]
fn a_database_with_several_sessions_needs_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(&dir.path().join("opencode.db"), &sessions());
    let (code, stdout, stderr) = request(&db, &[]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("has 6 sessions; choose one with --session"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ses_pr16751  Merged steps after a retry"),
        "{stderr}"
    );

    // PR #16751's message: the aborted tool's call is followed by text (as 1.18.25 sends it).
    let doc = request_json(
        &db,
        &["--session", "ses_pr16751", "--opencode-version", "1.18.25"],
    );
    assert_eq!(doc["session"], "ses_pr16751");
    assert_eq!(doc["messages"][1]["message_id"], msg_id(11));
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(
        problems[0]["part_id"],
        prt_id(11, 3),
        "the text after the tool"
    );

    let healthy = request_json(&db, &["--session", "ses_healthy"]);
    assert_eq!(healthy["problems"], serde_json::json!([]));
}

#[test]
fn from_1_18_26_anthropic_gets_the_tool_calls_after_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(&dir.path().join("opencode.db"), &sessions());
    // The store says 1.18.33: its `@ai-sdk/anthropic` moves the step's `tool_use` blocks after
    // its text, so the merged step of PR #16751 reaches Anthropic well-formed.
    let doc = request_json(&db, &["--session", "ses_pr16751"]);
    assert_eq!(doc["problems"], serde_json::json!([]));
    let (role, blocks) = shape(&doc)[1].clone();
    assert_eq!(role, "assistant");
    assert_eq!(blocks, ["text", "text", "tool_use", "tool_use"]);
    // OpenAI takes text and calls in one message, whatever the version.
    for version in ["1.18.25", "1.18.33"] {
        let doc = request_json(
            &db,
            &[
                "--session",
                "ses_pr16751",
                "--provider",
                "openai",
                "--opencode-version",
                version,
            ],
        );
        assert_eq!(doc["problems"], serde_json::json!([]), "{version}");
    }
}

#[test]
fn a_database_with_one_session_needs_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let only: Vec<Ses> = sessions()
        .into_iter()
        .filter(|s| s.id == "ses_crash")
        .collect();
    let db = build_db(&dir.path().join("opencode.db"), &only);
    let doc = request_json(&db, &[]);
    assert_eq!(doc["session"], "ses_crash");
    // From 1.1 on the pending tool is sent as an interrupted, error result…
    let last = doc["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["blocks"][0]["type"], "tool_result");
    assert_eq!(last["blocks"][0]["is_error"], true);
    assert_eq!(doc["problems"], serde_json::json!([]));
    // …before, the pending tool is not sent at all.
    let old = request_json(&db, &["--opencode-version", "1.0.185"]);
    assert_eq!(old["opencode_version"], "1.0.185");
    let types: Vec<String> = shape(&old).into_iter().flat_map(|(_, b)| b).collect();
    assert_eq!(types, ["text", "text"]);
    let (_, human, _) = request(&db, &["--opencode-version", "1.0.185"]);
    assert!(
        human.contains("(as OpenCode < 1.1 sends it), for Anthropic"),
        "{human}"
    );
}

#[test]
fn findings_about_the_rebuilt_request_point_to_it() {
    for rule in ["step-merged", "tool-use-without-result"] {
        let (_, doc) = diagnose_json(&repo(MERGED), &["--select", rule]);
        let f = findings(&doc);
        assert!(!f.is_empty(), "{rule}");
        for f in &f {
            assert!(
                f["help"].as_str().unwrap().contains(
                    "see `rewind request <store> --session ses_3c1f0e2a9ffeB4nM5qW6eR7tY8`"
                ),
                "{rule}: {f}"
            );
        }
    }
    // Not for an agent log: nothing is rebuilt from it.
    let (_, doc) = diagnose_json(&repo("samples/step-without-finish.log"), &[]);
    for f in findings(&doc) {
        assert!(
            !f["help"].as_str().unwrap_or("").contains("rewind request"),
            "{f}"
        );
    }
}

/// Writes an export's session as a legacy storage folder (`storage/session|message|part/…`).
fn storage_from_export(export: &Path, dir: &Path) -> std::path::PathBuf {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(export).unwrap()).unwrap();
    let root = dir.join("storage");
    let sid = doc["info"]["id"].as_str().unwrap().to_owned();
    std::fs::create_dir_all(root.join("session/prj_1")).unwrap();
    std::fs::write(
        root.join(format!("session/prj_1/{sid}.json")),
        doc["info"].to_string(),
    )
    .unwrap();
    for m in doc["messages"].as_array().unwrap() {
        let mid = m["info"]["id"].as_str().unwrap();
        std::fs::create_dir_all(root.join(format!("message/{sid}"))).unwrap();
        std::fs::write(
            root.join(format!("message/{sid}/{mid}.json")),
            m["info"].to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(root.join(format!("part/{mid}"))).unwrap();
        for p in m["parts"].as_array().unwrap() {
            let pid = p["id"].as_str().unwrap();
            std::fs::write(root.join(format!("part/{mid}/{pid}.json")), p.to_string()).unwrap();
        }
    }
    root
}

#[test]
fn a_storage_folder_rebuilds_like_its_export() {
    let dir = tempfile::tempdir().unwrap();
    let root = storage_from_export(&repo(MERGED), dir.path());
    assert_eq!(request_json(&root, &[]), request_json(&repo(MERGED), &[]));
}

#[test]
fn a_store_without_sessions_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_db(&dir.path().join("opencode.db"), &[]);
    let (code, stdout, stderr) = request(&db, &[]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(stderr.contains("has no sessions"), "{stderr}");
}

/// The thinking session killed mid-tool, recorded with the real Claude Code.
const THINKING_KILLED: &str = "tests/fixtures/transcripts/claude-thinking/kill_tool/886e3896-7ebe-4e64-a23a-94324a296304.jsonl";

#[test]
fn a_claude_transcript_shows_the_request_the_client_resumes_with() {
    let doc = request_json(&repo(THINKING_KILLED), &[]);
    assert_eq!(doc["provider"], "anthropic");
    assert_eq!(doc["client"], "claude-code");
    assert_eq!(doc["client_version"], "2.1.197");
    assert!(doc["opencode_version"].is_null(), "{doc}");
    // The unanswered call is left out, its signed thinking kept: what Claude Code 2.1.197 sent.
    assert_eq!(
        shape(&doc),
        [
            ("user".to_owned(), vec!["text".to_owned()]),
            (
                "assistant".to_owned(),
                vec!["reasoning".to_owned(), "text".to_owned()]
            ),
        ]
    );
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["rule"], "thinking-modified");
    assert_eq!(problems[0]["message_index"], 1);
    assert_eq!(problems[0]["block_index"], 0);
    assert!(
        problems[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("messages.1.content.0: `thinking` or `redacted_thinking` blocks")
    );
    let (code, human, _) = request(&repo(THINKING_KILLED), &[]);
    assert_eq!(code, 0);
    assert!(human.contains("✗ reasoning"), "{human}");
    assert!(!human.contains("--session"), "{human}");
}

#[test]
fn a_healthy_thinking_transcript_keeps_the_rules() {
    let dir = repo("tests/fixtures/transcripts/claude-thinking/tool");
    let doc = request_json(&dir.join("5713be46-0f55-4f2c-821c-2586a09e9f57.jsonl"), &[]);
    assert!(doc["problems"].as_array().unwrap().is_empty(), "{doc}");
    assert!(
        shape(&doc)
            .iter()
            .any(|(_, b)| b.first().map(String::as_str) == Some("reasoning"))
    );
}

#[test]
fn a_codex_rollout_shows_the_synthetic_output_for_an_unanswered_call() {
    let doc = request_json(
        &repo("tests/fixtures/transcripts/codex-orphan-call.jsonl"),
        &[],
    );
    assert_eq!(doc["provider"], "openai");
    let last = doc["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool", "{doc}");
    assert!(doc["problems"].as_array().unwrap().is_empty(), "{doc}");
}

#[test]
fn opencode_options_are_refused_for_a_transcript() {
    let (code, _, stderr) = request(&repo(THINKING_KILLED), &["--opencode-version", "1.14.0"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("are for OpenCode stores"), "{stderr}");
}

/// Claude Code 2.1.281 and later send a call the kill left unanswered, answered with their own
/// interrupted result and a synthetic reply (recorded: `tests/fixtures/matrix/claude-code/`);
/// 2.1.280 leaves it out.
#[test]
fn a_killed_call_is_rebuilt_as_each_claude_code_version_resumes_it() {
    let killed = |version: &str| {
        let dir = repo("tests/fixtures/matrix/claude-code")
            .join(version)
            .join("kill_tool");
        let file = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                n.ends_with(".jsonl") && n != "requests.jsonl"
            })
            .unwrap();
        request_json(&file, &[])
    };
    let old = killed("2.1.280");
    assert_eq!(old["client_version"], "2.1.280");
    assert!(!old.to_string().contains("tool_use"), "{old}");
    let new = killed("2.1.281");
    let s = shape(&new);
    assert_eq!(
        s[s.len() - 3..],
        [
            (
                "assistant".to_owned(),
                vec!["text".to_owned(), "tool_use".to_owned()]
            ),
            ("user".to_owned(), vec!["tool_result".to_owned()]),
            ("assistant".to_owned(), vec!["text".to_owned()]),
        ]
    );
    assert_eq!(new["problems"].as_array().map(Vec::len), Some(0), "{new}");
}

/// A Claude Code transcript whose second call reuses the first call's id: the rebuilt request
/// carries Anthropic's `tool_use ids must be unique` at the second call; with distinct ids (the
/// healthy twin) it keeps the rules.
#[test]
fn a_reused_tool_use_id_is_refused_at_the_second_call() {
    let doc = request_json(
        &repo("tests/fixtures/checks/tool-call-duplicate-claude.jsonl"),
        &[],
    );
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{doc}");
    assert_eq!(problems[0]["rule"], "tool-call-duplicate");
    assert_eq!(
        problems[0]["error"],
        "messages.3.content.0: `tool_use` ids must be unique"
    );
    assert_eq!(problems[0]["message_id"], "msg_fx_002");
    // The human view sends the reader to the rule's documentation, not to a repair that
    // leaves it alone.
    let (_, human, _) = request(
        Path::new("tests/fixtures/checks/tool-call-duplicate-claude.jsonl"),
        &[],
    );
    // Words as read, whatever the width wrapped.
    let flat = human.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("`rewind explain tool-call-duplicate` says how to fix it"),
        "{human}"
    );
    assert!(!flat.contains("`rewind repair` plans"), "{human}");
    let clean = request_json(
        &repo("tests/fixtures/rules/tool-call-duplicate.claude-transcript.clean.jsonl"),
        &[],
    );
    assert_eq!(clean["problems"], serde_json::json!([]));
}
