//! `rewind sessions` on OpenCode's data folder (every store in it) and with no store (the
//! stores of this machine, found from a fake HOME and XDG_DATA_HOME: never the real ones).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::opencode::*;
use common::*;
use serde_json::Value;

/// The fixture sessions with these ids.
fn only(ids: &[&str]) -> Vec<Ses> {
    sessions()
        .into_iter()
        .filter(|s| ids.contains(&s.id))
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A data folder: `opencode.db` with two sessions, `opencode-dev.db` with one of them and one
/// of its own, and the damaged storage fixture as `storage/`.
fn data_folder(dir: &Path) -> PathBuf {
    let data = dir.to_path_buf();
    std::fs::create_dir_all(&data).unwrap();
    build_db(
        &data.join("opencode.db"),
        &only(&["ses_healthy", "ses_dup"]),
    );
    build_db(
        &data.join("opencode-dev.db"),
        &only(&["ses_healthy", "ses_crash"]),
    );
    copy_tree(
        &repo("tests/fixtures/checks/storage-file-damaged"),
        &data.join("storage"),
    );
    data
}

/// `rewind sessions ARGS` with a fake home (and nothing else of the environment that says
/// where stores are).
fn sessions_in(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> (i32, String) {
    let mut cmd = rewind();
    // Wide enough for a line naming a temporary folder to stay one line.
    cmd.env("HOME", home)
        .env("USERPROFILE", home)
        .env("COLUMNS", "240");
    for k in [
        "XDG_DATA_HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "OPENCODE_DB",
        "OPENCODE_DISABLE_CHANNEL_DB",
        "KILO_DB",
        "GEMINI_CLI_HOME",
        "COPILOT_HOME",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.arg("sessions").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn store<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["store"] == name)
        .unwrap_or_else(|| panic!("no store {name} in {doc}"))
}

#[test]
fn a_data_folder_lists_every_store_and_what_opencode_db_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let data = data_folder(&dir.path().join("opencode"));
    let (code, json) = sessions_in(
        dir.path(),
        &[],
        &["--format", "json", data.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let names: Vec<&str> = doc["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["store"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["opencode.db", "opencode-dev.db", "storage/"]);

    let main = store(&doc, "opencode.db");
    assert_eq!(main["sessions"], 2);
    assert_eq!(main["hidden"], 0);
    assert_eq!(main["not_in_opencode_db"], Value::Null);
    assert!(main["read_by"].as_str().unwrap().contains("releases"));

    let dev = store(&doc, "opencode-dev.db");
    assert_eq!(dev["channel"], "dev");
    assert_eq!(dev["sessions"], 2);
    assert_eq!(dev["not_in_opencode_db"], 1, "ses_crash is only there");
    assert!(dev["read_by"].as_str().unwrap().contains("`dev`"));
    let ids: Vec<&str> = dev["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"ses_crash"), "{ids:?}");

    let storage = store(&doc, "storage/");
    assert_eq!(storage["kind"], "opencode-storage");
    assert_eq!(storage["sessions"], 3);
    assert_eq!(storage["hidden"], Value::Null);
    assert_eq!(storage["findings"]["errors"], 3, "its three damaged files");
    assert!(
        doc["which_store"]
            .as_str()
            .unwrap()
            .contains("opencode-<channel>.db")
    );

    let (_, human) = sessions_in(dir.path(), &[], &[data.to_str().unwrap()]);
    for needle in [
        "OpenCode data folder",
        "not in opencode.db",
        "1 session is only in",
        "opencode-dev.db",
        "a build of the channel `dev` does",
        "3 sessions are only in",
        "Which store an OpenCode reads",
        "`opencode db path`",
    ] {
        assert!(human.contains(needle), "{needle} missing from:\n{human}");
    }
}

#[test]
fn a_store_that_cannot_be_read_is_listed_with_why_and_the_others_still_are() {
    let dir = tempfile::tempdir().unwrap();
    let data = data_folder(&dir.path().join("opencode"));
    std::fs::write(data.join("opencode-local.db"), "not a database").unwrap();
    std::fs::write(data.join("opencode-stable.db"), "").unwrap();
    let (code, json) = sessions_in(
        dir.path(),
        &[],
        &["--format", "json", data.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let local = store(&doc, "opencode-local.db");
    assert!(
        local["error"]
            .as_str()
            .unwrap()
            .contains("opencode-local.db"),
        "{local}"
    );
    assert_eq!(local["not_in_opencode_db"], Value::Null);
    // SQLite reads an empty file as an empty database.
    let stable = store(&doc, "opencode-stable.db");
    assert_eq!(
        (stable["error"].clone(), stable["sessions"].clone()),
        (Value::Null, 0.into())
    );
    assert_eq!(store(&doc, "opencode.db")["sessions"], 2);
    assert_eq!(store(&doc, "storage/")["sessions"], 3);
}

#[test]
fn a_single_database_is_still_listed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = data_folder(&dir.path().join("opencode"));
    let (code, json) = sessions_in(
        dir.path(),
        &[],
        &[
            "--format",
            "json",
            data.join("opencode.db").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 2);
}

/// A fake home with an OpenCode data folder, a Claude Code project (a session and a subagent)
/// and a Codex rollout.
fn fake_home(home: &Path) {
    data_folder(&home.join(".local/share/opencode"));
    let project = home.join(".claude/projects/-home-me-app");
    std::fs::create_dir_all(project.join("0a1b/subagents")).unwrap();
    std::fs::copy(
        repo("tests/fixtures/transcripts/claude-healthy-tool.jsonl"),
        project.join("0a1b.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl"),
        project.join("0a1b/subagents/agent-a1.jsonl"),
    )
    .unwrap();
    // Not a transcript of a session: skipped.
    std::fs::write(project.join("notes.txt"), "x").unwrap();
    let day = home.join(".codex/sessions/2026/09/28");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(
        repo("tests/fixtures/transcripts/codex-orphan-call.jsonl"),
        day.join("rollout-2026-09-28T10-00-00-abc.jsonl"),
    )
    .unwrap();
}

#[test]
fn without_a_store_the_stores_of_this_machine_are_searched() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    fake_home(&home);
    let (code, json) = sessions_in(&home, &[], &["--format", "json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let searched: Vec<(&str, bool)> = doc["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["what"].as_str().unwrap(), s["found"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        searched,
        [
            ("OpenCode data folder", true),
            ("Kilo data folder", false),
            ("Claude Code transcripts", true),
            ("Codex rollouts", true),
            ("Gemini CLI sessions", false),
            ("Copilot CLI sessions", false),
        ]
    );
    assert_eq!(
        doc["searched"][0]["path"].as_str().map(PathBuf::from),
        Some(home.join(".local/share/opencode"))
    );
    assert_eq!(store(&doc, "opencode.db")["sessions"], 2);
    assert_eq!(store(&doc, "opencode-dev.db")["not_in_opencode_db"], 1);
    let claude = store(&doc, "Claude Code transcripts");
    assert_eq!(claude["sessions"], 2, "the session and its subagent");
    let files: Vec<&str> = claude["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["file"].as_str().unwrap())
        .collect();
    assert!(files[0].ends_with("0a1b.jsonl"), "{files:?}");
    assert!(files[1].ends_with("subagents/agent-a1.jsonl"), "{files:?}");
    let codex = store(&doc, "Codex rollouts");
    assert_eq!(codex["sessions"], 1);
    assert!(
        codex["findings"]["errors"].as_u64().unwrap() >= 1,
        "{codex}"
    );

    let (_, human) = sessions_in(&home, &[], &[]);
    for needle in [
        "searched:",
        "Claude Code transcripts (",
        "Codex rollouts (",
        "0a1b/subagents/agent-a1.jsonl",
        "2026/09/28/rollout-2026-09-28T10-00-00-abc.jsonl",
        "1 session is only in",
    ] {
        assert!(human.contains(needle), "{needle} missing from:\n{human}");
    }
}

#[test]
fn xdg_data_home_codex_home_and_claude_config_dir_move_the_stores() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fake_home(&elsewhere);
    let xdg = elsewhere.join(".local/share");
    let claude = elsewhere.join(".claude");
    let codex = elsewhere.join(".codex");
    let (code, json) = sessions_in(
        &home,
        &[
            ("XDG_DATA_HOME", &xdg),
            ("CLAUDE_CONFIG_DIR", &claude),
            ("CODEX_HOME", &codex),
        ],
        &["--format", "json"],
    );
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let searched: Vec<(&str, &str, bool)> = doc["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["what"].as_str().unwrap(),
                s["via"].as_str().unwrap(),
                s["found"].as_bool().unwrap(),
            )
        })
        .collect();
    // Both data folders are searched: a shell without XDG_DATA_HOME writes to the default one.
    assert_eq!(
        searched,
        [
            ("OpenCode data folder", "$XDG_DATA_HOME/opencode", true),
            ("OpenCode data folder", "~/.local/share/opencode", false),
            ("Kilo data folder", "$XDG_DATA_HOME/kilo", false),
            ("Kilo data folder", "~/.local/share/kilo", false),
            (
                "Claude Code transcripts",
                "$CLAUDE_CONFIG_DIR/projects",
                true
            ),
            ("Codex rollouts", "$CODEX_HOME/sessions", true),
            ("Gemini CLI sessions", "~/.gemini/tmp", false),
            ("Copilot CLI sessions", "~/.copilot/session-state", false),
        ]
    );
    assert_eq!(
        store(&doc, "opencode.db in $XDG_DATA_HOME/opencode")["sessions"],
        2
    );
}

#[test]
fn when_nothing_is_found_it_says_what_was_searched() {
    let dir = tempfile::tempdir().unwrap();
    let (code, human) = sessions_in(dir.path(), &[], &[]);
    assert_eq!(code, 0);
    assert!(
        human.starts_with("no session store found on this machine"),
        "{human}"
    );
    for place in [
        ".local/share/opencode",
        ".local/share/kilo",
        ".claude/projects",
        ".codex/sessions",
        ".gemini/tmp",
        ".copilot/session-state",
    ] {
        let line = human
            .lines()
            .find(|l| l.contains(place))
            .unwrap_or_else(|| panic!("{place} not named in:\n{human}"));
        assert!(line.contains(dir.path().to_str().unwrap()), "{line}");
        assert!(line.ends_with("nothing there"), "{line}");
    }
    let (_, json) = sessions_in(dir.path(), &[], &["--format", "json"]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["stores"].as_array().unwrap().len(), 0);
    assert_eq!(doc["searched"].as_array().unwrap().len(), 6);
}

#[test]
fn every_transcript_store_sessions_lists_takes_a_session() {
    // What `rewind sessions` lists under ~/.claude/projects and ~/.codex/sessions, every command
    // that takes a store accepts with `--session ID`.
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-home-me-app");
    let day = home.path().join(".codex/sessions/2026/11/28");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(
        repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl"),
        project.join("5e551011-0000-4000-8000-000000000001.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        repo("tests/fixtures/transcripts/codex-orphan-call.jsonl"),
        day.join("rollout-2026-11-28T00-00-00-0c0dex00-0000-7000-8000-000000000001.jsonl"),
    )
    .unwrap();
    let claude = home.path().join(".claude/projects");
    let codex = home.path().join(".codex/sessions");
    let run = |args: &[&std::ffi::OsStr]| {
        let out = rewind().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    for (store, id) in [
        (&claude, "5e551011-0000-4000-8000-000000000001"),
        (&project, "5e551011-0000-4000-8000-000000000001"),
        (&codex, "0c0dex00-0000-7000-8000-000000000001"),
    ] {
        let (code, stdout, stderr) = run(&[&os("sessions"), store.as_os_str()]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains(id), "{stdout}");
        let (code, stdout, stderr) = run(&[
            &os("diagnose"),
            store.as_os_str(),
            &os("--session"),
            &os(id),
        ]);
        assert_eq!(code, 1, "{stdout}{stderr}");
        let (code, stdout, stderr) =
            run(&[&os("request"), store.as_os_str(), &os("--session"), &os(id)]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("the next request"), "{stdout}");
        let (code, stdout, stderr) = run(&[
            &os("repair"),
            &os("--dry-run"),
            store.as_os_str(),
            &os("--session"),
            &os(id),
        ]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("dry run"), "{stdout}");
    }
    // Without a session, the folder is named for what it is.
    let (code, _, stderr) = run(&[&os("diagnose"), claude.as_os_str()]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--session ID") && stderr.contains("rewind check"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&[
        &os("diagnose"),
        codex.as_os_str(),
        &os("--session"),
        &os("nope"),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("has no session nope"), "{stderr}");
}
