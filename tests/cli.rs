//! The binary's contract: exit codes, bad input, output hygiene.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;

use common::*;

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = rewind().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn diagnose(path: &std::path::Path) -> (i32, String, String) {
    run(&["diagnose".as_ref(), path.as_os_str()])
}

fn temp_with(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f
}

/// Bad input: one line on stderr that says what and where, nothing on stdout, exit 2, no panic.
fn assert_one_line_error(path: &std::path::Path, expect: &[&str]) {
    let (code, stdout, stderr) = diagnose(path);
    assert_eq!(code, 2, "stderr: {stderr}");
    assert!(stdout.is_empty(), "stdout: {stdout}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for word in expect {
        assert!(stderr.contains(word), "{word:?} not in {stderr}");
    }
}

#[test]
fn missing_file() {
    let path = std::path::Path::new("no/such/session.log");
    assert_one_line_error(path, &["no/such/session.log", "No such file"]);
}

#[test]
fn directory() {
    let dir = tempfile::tempdir().unwrap();
    assert_one_line_error(dir.path(), &["is a directory"]);
}

#[test]
fn empty_file() {
    let f = temp_with(b"");
    assert_one_line_error(f.path(), &["is empty"]);
    let f = temp_with(b"\n\n  \n");
    assert_one_line_error(f.path(), &["is empty"]);
}

#[test]
fn binary_garbage() {
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let f = temp_with(&garbage);
    let (code, _, stderr) = diagnose(f.path());
    assert_eq!(code, 2);
    assert!(
        stderr.contains("not text") || stderr.contains("not valid UTF-8"),
        "{stderr}"
    );
    let f = temp_with(b"{\"type\":\"log\"}\n\x00\x01\x02");
    assert_one_line_error(f.path(), &["NUL byte", "line 2"]);
    // Past the sniffed head, the streaming reader says where too.
    let mut late = b"{\"type\":\"status\",\"mode\":\"stdin-stream\"}\n".repeat(3000);
    late.extend_from_slice(b"{\"type\":\"log\"}\x00\n");
    let f = temp_with(&late);
    assert_one_line_error(f.path(), &["binary data", "line 3001"]);
}

#[test]
fn invalid_utf8_says_where() {
    // Valid head, invalid byte later on: the reader reports the byte offset and line.
    let mut log =
        b"[2026-02-01T12:30:28.417Z] [INFO] {\"type\":\"status\",\"mode\":\"stdin-stream\"}\n"
            .to_vec();
    log.extend_from_slice(b"[2026-02-01T12:30:28.418Z] [INFO] caf\xe9\n");
    let f = temp_with(&log);
    assert_one_line_error(f.path(), &["invalid UTF-8", "line 2", "byte 111"]);
}

#[test]
fn unknown_format() {
    let f = temp_with(b"Dear diary,\ntoday the build broke.\n");
    assert_one_line_error(f.path(), &["cannot tell what", "Dear diary"]);
}

#[test]
fn truncated_log_still_gets_a_diagnosis() {
    let full = std::fs::read(repo("samples/zod-failed-status.log")).unwrap();
    // Cut in the middle of the running tool's JSON object.
    let cut = full
        .windows(b"\"running\"".len())
        .position(|w| w == b"\"running\"")
        .unwrap();
    let f = temp_with(&full[..cut + 3]);
    let (code, stdout, stderr) = diagnose(f.path());
    assert_eq!(code, 1, "stderr: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert!(stdout.contains("undecodable-record"), "{stdout}");
    assert!(stdout.contains("truncated"), "{stdout}");
    assert!(stdout.contains("step-unclosed"), "{stdout}");
}

#[test]
fn exit_codes_follow_fail_on() {
    let clean = repo("samples/clean-session.log");
    let (code, stdout, _) = diagnose(&clean);
    assert_eq!(code, 0);
    assert!(stdout.contains("no findings"));

    let broken = repo("samples/zod-failed-status.log");
    assert_eq!(diagnose(&broken).0, 1);

    // A warning alone fails only with --fail-on warning.
    let log = std::fs::read_to_string(repo("samples/clean-session.log")).unwrap();
    let with_timeout = log.replacen(
        "  \"type\": \"step_start\"",
        "  \"type\": \"error\",\n[2026-03-25T17:33:21.000Z] [INFO]   \"sessionID\": \"ses_2e8b04d61ffeHj1Kl2Zx3Cv4Bn\",\n[2026-03-25T17:33:21.000Z] [INFO]   \"error\": \"The operation timed out.\"\n[2026-03-25T17:33:21.000Z] [INFO] }\n[2026-03-25T17:33:21.000Z] [INFO] {\n[2026-03-25T17:33:21.000Z] [INFO]   \"type\": \"step_start\"",
        1,
    );
    let f = temp_with(with_timeout.as_bytes());
    let (code, stdout, _) = diagnose(f.path());
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("warning[session-error]"), "{stdout}");
    let (code, _, _) = run(&[
        "diagnose".as_ref(),
        "--fail-on".as_ref(),
        "warning".as_ref(),
        f.path().as_os_str(),
    ]);
    assert_eq!(code, 1);
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, stderr) = run(&["diagnose".as_ref()]);
    assert_eq!(code, 2, "{stderr}");
    let clean = repo("samples/clean-session.log");
    let (code, _, stderr) = run(&[
        "diagnose".as_ref(),
        "--select".as_ref(),
        "no-such-rule".as_ref(),
        clean.as_os_str(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown rule `no-such-rule`"), "{stderr}");
    let (code, _, _) = run(&["explain".as_ref(), "no-such-rule".as_ref()]);
    assert_eq!(code, 2);
}

#[test]
fn select_and_ignore() {
    let broken = repo("samples/zod-failed-status.log");
    let (_, doc) = diagnose_json(&broken, &["--select", "step-unclosed"]);
    let rules: Vec<_> = findings(&doc).iter().map(|f| f["rule"].clone()).collect();
    assert_eq!(rules, ["step-unclosed"]);
    let (_, doc) = diagnose_json(&broken, &["--ignore", "step-unclosed,session-error"]);
    assert!(
        findings(&doc)
            .iter()
            .all(|f| f["rule"] != "step-unclosed" && f["rule"] != "session-error")
    );
}

#[test]
fn a_log_cannot_drive_the_terminal() {
    let log = "{\"type\":\"error\",\"timestamp\":1,\"sessionID\":\"ses_1\",\"error\":\"boom \\u001b[2J\\u001b]0;pwned\\u0007 \\u202eevil\"}\n";
    let f = temp_with(log.as_bytes());
    let (_, stdout, _) = diagnose(f.path());
    assert!(
        !stdout.contains('\u{1b}'),
        "raw escape in output: {stdout:?}"
    );
    assert!(!stdout.contains('\u{7}') && !stdout.contains('\u{202e}'));
    assert!(stdout.contains("\\u{1b}[2J"), "{stdout}");
}

#[test]
fn color_only_when_asked() {
    let broken = repo("samples/zod-failed-status.log");
    let out = rewind().arg("diagnose").arg(&broken).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains('\u{1b}'),
        "NO_COLOR and no TTY"
    );
    let out = rewind()
        .env_remove("NO_COLOR")
        .args(["--color", "always", "diagnose"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
}

#[test]
fn json_output_has_positions_and_ids() {
    let broken = repo("samples/zod-failed-status.log");
    let (code, doc) = diagnose_json(&broken, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["summary"]["errors"], 4);
    let tool = findings(&doc)
        .into_iter()
        .find(|f| f["rule"] == "tool-never-finished")
        .unwrap();
    assert_eq!(span_text(&broken, &tool), "\"running\"");
    assert_eq!(tool["part_id"], "prt_d261c5f41001Hj6KlP0oIuYt5R");
    assert_eq!(tool["call_id"], "call_5b1e0c2f9a7d4e31");
    assert_eq!(tool["session_id"], "ses_2d9e3a1c0ffeQk4VYbq7XN2mTd");
    assert!(tool["line"].as_u64().unwrap() > 0 && tool["column"].as_u64().unwrap() > 0);
    assert_eq!(doc["files"][0]["sessions"][0]["steps_started"], 1);
}

#[test]
fn rules_and_explain() {
    let (code, stdout, _) = run(&["rules".as_ref()]);
    assert_eq!(code, 0);
    for rule in [
        "schema-violation",
        "validation-crash",
        "tool-error-dropped",
        "step-unclosed",
    ] {
        assert!(stdout.contains(rule), "{rule}");
    }
    let (code, stdout, _) = run(&["explain".as_ref(), "tool-error-dropped".as_ref()]);
    assert_eq!(code, 0);
    for section in [
        "## What it does",
        "## Why it matters",
        "## Example",
        "## How to fix",
    ] {
        assert!(stdout.contains(section), "{section}");
    }
}

#[test]
fn replayed_bodies_are_labelled_in_the_session_table() {
    // Wide enough for the table's cells to keep their words on one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("diagnose")
        .arg(repo("tests/fixtures/agent-log-body-preview.log"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("replayed HTTP response body, not a session"),
        "{stdout}"
    );
    assert!(stdout.contains("as the stream left them"), "{stdout}");
}

#[test]
fn exports_are_read_as_exports_whatever_their_layout() {
    let text = std::fs::read_to_string(repo("tests/fixtures/checks/export-healthy.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    // A long title and a long tool output: the distinguishing keys lie far into the file.
    doc["info"]["title"] = serde_json::Value::String("t".repeat(6 * 1024));
    let one_line = {
        let mut d = doc.clone();
        d["messages"][1]["parts"][0]["padding"] = serde_json::Value::String("x".repeat(80 * 1024));
        serde_json::to_string(&d).unwrap()
    };
    let indented = serde_json::to_string_pretty(&doc).unwrap();
    for text in [one_line, indented] {
        let f = temp_with(text.as_bytes());
        let (code, out) = diagnose_json(f.path(), &[]);
        assert!(code == 0 || code == 1, "exit {code}");
        assert_eq!(out["files"][0]["format"], "opencode-export");
    }
}

#[test]
fn help_suggests_repair_only_where_it_works() {
    // For every sample, a help that says `rewind repair` does something must be about this very
    // input only when `rewind repair` takes it; otherwise it names the store to repair instead.
    let mut seen = 0;
    for entry in std::fs::read_dir(common::repo("samples"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        let (_, doc) = common::diagnose_json(&path, &[]);
        let repairable = common::rewind()
            .args(["repair", "--dry-run"])
            .arg(&path)
            .output()
            .unwrap()
            .status
            .code()
            != Some(2);
        for f in common::findings(&doc) {
            let help = f["help"].as_str().unwrap_or_default();
            if !help.contains("`rewind repair` ")
                || help.contains("`rewind repair` the stored session")
            {
                continue;
            }
            seen += 1;
            assert!(
                repairable
                    || help.contains("on the OpenCode database or export that holds this session"),
                "{}: {} suggests a repair `rewind repair` refuses: {help}",
                path.display(),
                f["rule"]
            );
        }
    }
    assert!(seen >= 3, "{seen} helps checked");
}
