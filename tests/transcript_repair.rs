//! `rewind repair` on Claude Code transcripts and Codex rollouts (the fixtures of
//! `tests/fixtures/transcripts/`, copied to a scratch folder): what it changes, what it keeps,
//! the dry run, the backup, a second run, and a transcript a client may still be writing.
//! `tests/transcript_roundtrip.rs` resumes repaired files with the real clients.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn copy(name: &str, dir: &Path) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(repo(&format!("tests/fixtures/transcripts/{name}")), &to).unwrap();
    settle(&to);
    to
}

/// Dates the file a minute back: rewind refuses a file written to in the last seconds.
fn settle(path: &Path) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(past)
        .unwrap();
}

fn repair(path: &Path, extra: &[&str]) -> (i32, Value, String) {
    let out = rewind()
        .arg("repair")
        .args(extra)
        .args(["--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn problems(doc: &Value) -> Vec<String> {
    doc["plan"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["problem"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const CASES: &[(&str, &str)] = &[
    ("claude-api-error-torn.jsonl", "torn-last-line"),
    ("claude-orphan-result.jsonl", "orphan-result"),
    ("claude-orphan-tool.jsonl", "unanswered-call"),
    ("codex-orphan-call.jsonl", "unanswered-call"),
];

#[test]
fn repairs_each_problem_once_with_a_whole_backup() {
    for (name, problem) in CASES {
        let dir = tempfile::tempdir().unwrap();
        let file = copy(name, dir.path());
        let original = std::fs::read(&file).unwrap();

        let (code, doc, stderr) = repair(&file, &["--dry-run"]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(problems(&doc), [*problem], "{name}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original,
            "{name}: a dry run wrote"
        );
        assert_eq!(
            files_in(dir.path()).len(),
            1,
            "{name}: a dry run left files"
        );

        let (code, doc, stderr) = repair(&file, &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(doc["applied"], true, "{name}");
        let backup = PathBuf::from(doc["backup"].as_str().unwrap());
        assert_eq!(std::fs::read(&backup).unwrap(), original, "{name}");
        // Only the file and its backup: no partial backup, no temporary file.
        assert_eq!(
            files_in(dir.path()).len(),
            2,
            "{name}: {:?}",
            files_in(dir.path())
        );
        let repaired = std::fs::read(&file).unwrap();
        assert_ne!(repaired, original, "{name}");

        let (code, doc, _) = repair(&file, &[]);
        assert_eq!(code, 0, "{name}");
        assert!(
            problems(&doc).is_empty(),
            "{name}: a second run planned {doc}"
        );
        assert_eq!(doc["applied"], false, "{name}");
        assert_eq!(std::fs::read(&file).unwrap(), repaired, "{name}");
        assert_eq!(files_in(dir.path()).len(), 2, "{name}");
    }
}

#[test]
fn keeps_every_line_that_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["claude-orphan-tool.jsonl", "codex-orphan-call.jsonl"] {
        let file = copy(name, dir.path());
        let original = std::fs::read_to_string(&file).unwrap();
        assert_eq!(repair(&file, &[]).0, 0);
        let repaired = std::fs::read_to_string(&file).unwrap();
        assert!(
            repaired.starts_with(&original),
            "{name}: a line was rewritten"
        );
        assert_eq!(repaired[original.len()..].lines().count(), 1, "{name}");
    }
    // A torn line is cut at the end of the line before it.
    let file = copy("claude-api-error-torn.jsonl", dir.path());
    let original = std::fs::read_to_string(&file).unwrap();
    assert_eq!(repair(&file, &[]).0, 0);
    let repaired = std::fs::read_to_string(&file).unwrap();
    assert_eq!(repaired.len(), original.rfind('\n').unwrap() + 1);
    assert!(original.starts_with(&repaired));
}

#[test]
fn the_added_records_are_shaped_like_the_clients() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy("claude-orphan-tool.jsonl", dir.path());
    let before = lines(&file);
    repair(&file, &[]);
    let after = lines(&file);
    let (call, result) = (&before[before.len() - 1], &after[after.len() - 1]);
    let id = call["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()["id"]
        .clone();
    assert_eq!(result["type"], "user");
    assert_eq!(result["parentUuid"], call["uuid"]);
    assert_eq!(result["sourceToolAssistantUUID"], call["uuid"]);
    assert_eq!(result["sessionId"], call["sessionId"]);
    let block = &result["message"]["content"][0];
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["tool_use_id"], id);
    assert_eq!(block["is_error"], true);
    assert_eq!(
        block["content"],
        "[Request interrupted by user for tool use]"
    );

    let file = copy("codex-orphan-call.jsonl", dir.path());
    let before = lines(&file);
    repair(&file, &[]);
    let after = lines(&file);
    let out = &after[after.len() - 1];
    let call = before
        .iter()
        .find(|l| l["payload"]["type"] == "function_call")
        .unwrap();
    assert_eq!(out["type"], "response_item");
    assert_eq!(out["payload"]["type"], "function_call_output");
    assert_eq!(out["payload"]["call_id"], call["payload"]["call_id"]);
    assert_eq!(out["payload"]["output"], "aborted");
    if let Some(n) = before[before.len() - 1]["ordinal"].as_u64() {
        assert_eq!(out["ordinal"], n + 1);
    }
}

#[test]
fn healthy_transcripts_have_nothing_to_repair() {
    for name in [
        "claude-healthy-tool.jsonl",
        "claude-resumed-dead-end.jsonl",
        "claude-resume-synthetic.jsonl",
        "codex-healthy-tool.jsonl",
        "codex-task-error.jsonl",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = copy(name, dir.path());
        let (code, doc, stderr) = repair(&file, &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(problems(&doc).is_empty(), "{name}: {doc}");
        assert_eq!(
            files_in(dir.path()).len(),
            1,
            "{name}: no backup when nothing changes"
        );
    }
}

#[test]
fn a_call_written_just_now_is_left_to_the_client_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rollout.jsonl");
    let now = "2099-01-01T00:00:00.000Z"; // later than any clock: "just now"
    let text = format!(
        "{{\"timestamp\":\"{now}\",\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{{\"id\":\"t1\",\"cwd\":\"/p\",\"cli_version\":\"0.169.0\"}}}}\n\
         {{\"timestamp\":\"{now}\",\"ordinal\":1,\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"hi\"}}]}}}}\n\
         {{\"timestamp\":\"{now}\",\"ordinal\":2,\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call\",\"name\":\"exec_command\",\"arguments\":\"{{}}\",\"call_id\":\"c1\"}}}}\n"
    );
    std::fs::write(&file, &text).unwrap();
    settle(&file);
    let (code, _, stderr) = repair(&file, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("may still be running the tool"), "{stderr}");
    assert!(stderr.contains("no backup was left behind"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert_eq!(files_in(dir.path()).len(), 1);
    let (code, doc, stderr) = repair(&file, &["--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["applied"], true);
}

#[test]
fn the_human_plan_names_the_line_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy("claude-api-error-torn.jsonl", dir.path());
    let out = rewind()
        .args(["repair", "--dry-run"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("torn-last-line"), "{text}");
    assert!(
        text.contains("dry run: nothing was written (1 changes planned)"),
        "{text}"
    );
}

#[test]
fn a_killed_repair_leaves_the_file_as_it_was_and_the_next_run_cleans_up() {
    for point in ["after-backup", "before-rename"] {
        let dir = tempfile::tempdir().unwrap();
        let file = copy("claude-orphan-tool.jsonl", dir.path());
        let original = std::fs::read(&file).unwrap();
        let out = rewind()
            .env("REWIND_TEST_ABORT_AT", point)
            .arg("repair")
            .arg(&file)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{point}: the hook did not abort");
        assert_eq!(std::fs::read(&file).unwrap(), original, "{point}");
        // Whatever it left under a backup's final name is a whole backup.
        for f in files_in(dir.path()) {
            if f.contains(".rewind-backup-") && !f.contains(".partial-") {
                assert_eq!(
                    std::fs::read(dir.path().join(&f)).unwrap(),
                    original,
                    "{point}"
                );
            }
        }
        let (code, doc, stderr) = repair(&file, &[]);
        assert_eq!(code, 0, "{point}: {stderr}");
        assert_eq!(doc["applied"], true, "{point}");
        let left: Vec<String> = files_in(dir.path())
            .into_iter()
            .filter(|f| f.contains(".partial-") || f.contains(".rewind-tmp-"))
            .collect();
        assert!(left.is_empty(), "{point}: {left:?}");
    }
}

#[test]
fn a_file_written_to_just_now_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("torn.jsonl");
    std::fs::copy(
        repo("tests/fixtures/transcripts/claude-api-error-torn.jsonl"),
        &file,
    )
    .unwrap();
    let original = std::fs::read(&file).unwrap();
    let (code, _, stderr) = repair(&file, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a client is writing it"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), original);
    assert_eq!(files_in(dir.path()).len(), 1);
    // The dry run still shows the plan.
    let (code, doc, _) = repair(&file, &["--dry-run"]);
    assert_eq!((code, problems(&doc).len()), (0, 1));
    let (code, doc, stderr) = repair(&file, &["--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["applied"], true);
}

#[test]
fn a_torn_line_after_an_unanswered_call_is_trimmed_and_the_call_answered_in_one_run() {
    for (name, fragment) in [
        (
            "claude-orphan-tool.jsonl",
            "{\"type\":\"last-prompt\",\"lastPr",
        ),
        (
            "codex-orphan-call.jsonl",
            "{\"timestamp\":\"2026-01-01T00:00:0",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = copy(name, dir.path());
        let whole = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("{whole}{fragment}")).unwrap();
        settle(&file);
        let (code, doc, stderr) = repair(&file, &[]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(
            problems(&doc),
            ["torn-last-line", "unanswered-call"],
            "{name}"
        );
        let repaired = std::fs::read_to_string(&file).unwrap();
        assert!(repaired.starts_with(&whole), "{name}");
        assert!(!repaired.contains(fragment), "{name}");
        assert!(repaired[whole.len()..].ends_with('\n'), "{name}");
        assert!(problems(&repair(&file, &[]).1).is_empty(), "{name}");
    }
}

/// A session killed while a tool ran, repaired, is a session that stopped on purpose: the call
/// carries the client's own interruption output, and nothing is reported (the unrepaired file
/// reports the open call). A turn whose results are real outputs the model never answered is
/// still reported.
#[test]
fn a_repaired_kill_is_a_deliberate_stop() {
    for name in ["claude-orphan-tool.jsonl", "codex-orphan-call.jsonl"] {
        let dir = tempfile::tempdir().unwrap();
        let to = copy(name, dir.path());
        let (_, before) = diagnose_json(&to, &[]);
        assert!(
            !of_rule(&findings(&before), "tool-never-finished").is_empty(),
            "{name}: {}",
            describe(&findings(&before))
        );
        let (code, _, err) = repair(&to, &["--force"]);
        assert_eq!(code, 0, "{name}: {err}");
        let (_, after) = diagnose_json(&to, &[]);
        let after = findings(&after);
        assert!(
            of_rule(&after, "message-incomplete").is_empty()
                && of_rule(&after, "tool-never-finished").is_empty(),
            "{name}: {}",
            describe(&after)
        );
    }
    // The closest healthy-looking case that is not: real output the model never answered.
    let dir = tempfile::tempdir().unwrap();
    let cut = copy("codex-cut-after-output.jsonl", dir.path());
    let (_, doc) = diagnose_json(&cut, &[]);
    assert!(
        !of_rule(&findings(&doc), "message-incomplete").is_empty(),
        "{}",
        describe(&findings(&doc))
    );
}

/// adversarial, note B: a client that holds the transcript open for writing while idle (Codex
/// keeps its rollout open) would write on after the repair into the file the rename unlinked,
/// and lose it: a repair refuses while a process has the file open for writing, naming it,
/// unless `--force`.
#[test]
#[cfg(target_os = "linux")]
fn a_transcript_a_process_holds_open_for_writing_is_refused_unless_forced() {
    for name in ["codex-orphan-call.jsonl", "claude-orphan-tool.jsonl"] {
        let dir = tempfile::tempdir().unwrap();
        let path = copy(name, dir.path());
        let before = std::fs::read(&path).unwrap();
        // An idle writer: the file open for appending, nothing written.
        let mut holder = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3>>\"$1\"; echo open; exec sleep 60")
            .arg("sh")
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready, "open\n");
        let (code, _, stderr) = repair(&path, &[]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.contains("open for writing"), "{name}: {stderr}");
        assert!(
            stderr.contains(&holder.id().to_string()),
            "{name}: the process is named: {stderr}"
        );
        assert!(stderr.contains("--force"), "{name}: {stderr}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name}: unchanged");
        assert_eq!(files_in(dir.path()), [name], "{name}: no backup");
        // The dry run plans as before; --force repairs.
        let (code, doc, _) = repair(&path, &["--dry-run"]);
        assert_eq!((code, doc["applied"].as_bool()), (0, Some(false)), "{doc}");
        let (code, doc, stderr) = repair(&path, &["--force"]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(doc["applied"], true, "{doc}");
        holder.kill().unwrap();
        holder.wait().unwrap();
    }
}

/// A thinking block stored with its text emptied but its signature kept, in a session whose
/// other thinking kept its text: the repair drops the record that holds only that thinking, so
/// the response's tool call stays and the session is clean; twice is once. A session whose every
/// thinking text is empty (the display `omitted`) has nothing to repair.
#[test]
fn an_emptied_thinking_block_is_removed_and_the_message_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::copy(
        repo("tests/fixtures/checks/thinking-modified-blank.jsonl"),
        &path,
    )
    .unwrap();
    settle(&path);
    let calls_before = std::fs::read_to_string(&path)
        .unwrap()
        .matches("\"type\":\"tool_use\"")
        .count();
    let (code, doc, stderr) = repair(&path, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(problems(&doc), ["changed-thinking"], "{doc}");
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(after.matches("\"thinking\":\"\"").count(), 0);
    assert_eq!(after.matches("\"type\":\"tool_use\"").count(), calls_before);
    let (code, doc) = diagnose_json(&path, &[]);
    assert_eq!(code, 0, "{doc}");
    assert!(findings(&doc).is_empty(), "{}", describe(&findings(&doc)));
    settle(&path);
    let (code, doc, _) = repair(&path, &[]);
    assert_eq!(code, 0);
    assert!(problems(&doc).is_empty(), "{doc}");

    let omitted = dir.path().join("omitted.jsonl");
    std::fs::copy(
        repo("tests/fixtures/rules/thinking-modified.blank.clean.jsonl"),
        &omitted,
    )
    .unwrap();
    settle(&omitted);
    let (code, doc, _) = repair(&omitted, &["--dry-run"]);
    assert_eq!(code, 0);
    assert!(problems(&doc).is_empty(), "{doc}");
}
