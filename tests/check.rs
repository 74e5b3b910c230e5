//! `rewind check`: many files, rewind.toml, baselines and the CI output formats.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// A scratch project with copies of the samples, a README and a non-recording JSON file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("recordings");
    std::fs::create_dir_all(rec.join("legacy")).unwrap();
    for s in [
        "zod-failed-status.log",
        "clean-session.log",
        "pending-tool-aborted.log",
    ] {
        std::fs::copy(repo("samples").join(s), rec.join(s)).unwrap();
    }
    std::fs::copy(
        repo("samples/step-without-finish.log"),
        rec.join("legacy/step-without-finish.log"),
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "# recordings\n").unwrap();
    std::fs::write(dir.path().join("package.json"), "{\n  \"name\": \"x\"\n}\n").unwrap();
    dir
}

fn check(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = rewind()
        .current_dir(dir)
        .arg("check")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn jsonl(stdout: &str) -> (Vec<Value>, Value) {
    let mut lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let summary = lines.pop().unwrap();
    (lines, summary["summary"].clone())
}

#[test]
fn walks_skips_and_summarises() {
    let dir = project();
    let (code, stdout, _) = check(dir.path(), &["-v"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("4 files checked, 2 skipped"), "{stdout}");
    assert!(
        stdout.contains("skipped README.md: not a recording"),
        "{stdout}"
    );
    assert!(
        stdout.contains("skipped package.json: not a recording"),
        "{stdout}"
    );
    assert!(stdout.contains("│ step-unclosed"), "{stdout}");
    let (code, stdout, _) = check(dir.path(), &["recordings/clean-session.log"]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn parallel_output_is_deterministic() {
    let dir = project();
    let (_, one, _) = check(dir.path(), &["-j", "1", "--format", "jsonl"]);
    let (_, two, _) = check(dir.path(), &["-j", "2", "--format", "jsonl"]);
    assert_eq!(one, two);
}

#[test]
fn globs_and_gitignore() {
    let dir = project();
    std::fs::write(dir.path().join(".gitignore"), "recordings/legacy/\n").unwrap();
    let (_, stdout, _) = check(dir.path(), &["--format", "jsonl"]);
    let (_, summary) = jsonl(&stdout);
    assert_eq!(summary["files"], 3, "legacy/ is ignored");
    let (_, stdout, _) = check(
        dir.path(),
        &["--format", "jsonl", "recordings/**/pending-*.log"],
    );
    let (findings, summary) = jsonl(&stdout);
    assert_eq!(summary["files"], 1);
    assert!(
        findings
            .iter()
            .all(|f| f["file"] == "recordings/pending-tool-aborted.log")
    );
}

#[test]
fn config_selects_ignores_and_overrides() {
    let dir = project();
    std::fs::write(
        dir.path().join("rewind.toml"),
        "ignore = [\"session-error\"]\nfail-on = \"error\"\n\n[severity]\nvalidation-crash = \"warning\"\n\n[[overrides]]\npaths = [\"recordings/legacy/**\"]\nseverity = { step-unclosed = \"info\" }\n",
    )
    .unwrap();
    // Found upward from a subfolder.
    let sub = dir.path().join("recordings");
    let (_, stdout, _) = check(&sub, &["--format", "jsonl", "."]);
    let (findings, _) = jsonl(&stdout);
    assert!(findings.iter().all(|f| f["rule"] != "session-error"));
    let crash = findings
        .iter()
        .find(|f| f["rule"] == "validation-crash")
        .unwrap();
    assert_eq!(crash["severity"], "warning");
    let legacy_step = findings
        .iter()
        .find(|f| f["rule"] == "step-unclosed" && f["file"].as_str().unwrap().contains("legacy"))
        .unwrap();
    assert_eq!(legacy_step["severity"], "info");
    // Flags override the file.
    let (_, stdout, _) = check(
        dir.path(),
        &["--format", "jsonl", "--select", "session-error"],
    );
    let (findings, _) = jsonl(&stdout);
    assert!(!findings.is_empty() && findings.iter().all(|f| f["rule"] == "session-error"));
    let (_, stdout, _) = check(
        dir.path(),
        &[
            "--format",
            "jsonl",
            "--severity",
            "validation-crash=info",
            "--no-config",
        ],
    );
    let (findings, _) = jsonl(&stdout);
    let crash = findings
        .iter()
        .find(|f| f["rule"] == "validation-crash")
        .unwrap();
    assert_eq!(crash["severity"], "info");
}

#[test]
fn config_errors_name_the_key_or_rule() {
    let dir = project();
    std::fs::write(
        dir.path().join("rewind.toml"),
        "select = []\nfial-on = \"error\"\n",
    )
    .unwrap();
    let (code, _, stderr) = check(dir.path(), &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("fial-on") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    std::fs::write(
        dir.path().join("rewind.toml"),
        "ignore = [\"tool-eror-dropped\"]\n",
    )
    .unwrap();
    let (code, _, stderr) = check(dir.path(), &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("unknown rule `tool-eror-dropped`"),
        "{stderr}"
    );
    let (code, _, stderr) = check(dir.path(), &["--no-config", "--severity", "nope=info"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn baseline_round_trip() {
    let dir = project();
    let (code, _, stderr) = check(dir.path(), &["--write-baseline", "baseline.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("to the baseline"), "{stderr}");
    let (code, stdout, _) = check(dir.path(), &["--baseline", "baseline.json"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("no findings"), "{stdout}");
    assert!(stdout.contains("in the baseline"), "{stdout}");

    // Unrelated edits keep the fingerprints: lines added above, wrapper text changed.
    let zod = dir.path().join("recordings/zod-failed-status.log");
    let text = std::fs::read_to_string(&zod).unwrap();
    let edited = format!(
        "extra line\nanother\n{}",
        text.replace("Executing agent", "Running agent")
    );
    std::fs::write(&zod, edited).unwrap();
    let (code, stdout, _) = check(dir.path(), &["--baseline", "baseline.json"]);
    assert_eq!(code, 0, "{stdout}");

    // A new corrupted recording: only its findings, exit 1.
    std::fs::copy(
        repo("samples/sse-concatenated.log"),
        dir.path().join("recordings/new.log"),
    )
    .unwrap();
    let (code, stdout, _) = check(
        dir.path(),
        &["--baseline", "baseline.json", "--format", "jsonl"],
    );
    assert_eq!(code, 1);
    let (findings, _) = jsonl(&stdout);
    assert!(!findings.is_empty());
    assert!(
        findings.iter().all(|f| f["file"] == "recordings/new.log"),
        "{stdout}"
    );
}

#[test]
fn sarif_is_valid_2_1_0() {
    let dir = project();
    let (code, stdout, _) = check(dir.path(), &["--format", "sarif"]);
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    // Typed against the SARIF 2.1.0 schema (serde-sarif is generated from it).
    let typed: serde_sarif::sarif::Sarif = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(typed.version, "2.1.0");
    assert_eq!(
        doc["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    let run = &doc["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "rewind");
    let rules: Vec<&str> = driver["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            for key in ["id", "name", "helpUri"] {
                assert!(r[key].is_string(), "rule without {key}: {r}");
            }
            assert!(r["shortDescription"]["text"].is_string());
            assert!(r["fullDescription"]["text"].is_string());
            r["id"].as_str().unwrap()
        })
        .collect();
    let results = run["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        let id = r["ruleId"].as_str().unwrap();
        assert!(rules.contains(&id), "{id} not declared");
        assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize], id);
        assert!(matches!(
            r["level"].as_str(),
            Some("error" | "warning" | "note")
        ));
        assert!(r["message"]["text"].is_string());
        let loc = &r["locations"][0]["physicalLocation"];
        assert!(
            loc["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
                .starts_with("recordings/")
        );
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(r["partialFingerprints"]["rewindFinding/v1"].is_string());
    }
}

#[test]
fn github_annotations_and_step_summary() {
    let dir = project();
    // A file name that needs escaping in a property: `,` and `:`.
    std::fs::copy(
        repo("samples/pending-tool-aborted.log"),
        dir.path().join("recordings/run,1:a.log"),
    )
    .unwrap();
    let summary = dir.path().join("summary.md");
    let out = rewind()
        .current_dir(dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["check", "--format", "github", "recordings/run,1:a.log"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error file=recordings/run%2C1%3Aa.log,line=1,col=1,"),
        "{first}"
    );
    assert!(first.contains("title=rewind%3A step-unclosed::"), "{first}");
    assert!(stdout.lines().all(|l| !l.contains('\r')));
    assert!(
        stdout.contains("%0Ahelp: "),
        "multi-line messages are escaped"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("## rewind") && md.contains("| `tool-error-dropped` | 1 |"),
        "{md}"
    );
}

#[test]
fn junit_has_a_case_per_recording() {
    let dir = project();
    let (_, stdout, _) = check(dir.path(), &["--format", "junit"]);
    assert!(stdout.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    assert_eq!(stdout.matches("<testcase ").count(), 4);
    assert_eq!(stdout.matches("<failure ").count(), 3);
    assert!(
        stdout.contains("<testsuites name=\"rewind\" tests=\"4\" failures=\"3\" errors=\"0\">")
    );
    assert!(!stdout.contains('\u{1b}'));
}

#[test]
fn unreadable_inputs_exit_2() {
    let dir = project();
    let (code, _, stderr) = check(dir.path(), &["recordings", "missing-folder"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing-folder"), "{stderr}");
    // An explicitly named file that is not a recording is an error, not a skip.
    let (code, _, stderr) = check(dir.path(), &["README.md"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn exit_zero_and_fail_on() {
    let dir = project();
    assert_eq!(check(dir.path(), &["--exit-zero"]).0, 0);
    let rec: PathBuf = dir.path().join("recordings");
    std::fs::remove_dir_all(rec.join("legacy")).unwrap();
    for f in ["zod-failed-status.log", "pending-tool-aborted.log"] {
        std::fs::remove_file(rec.join(f)).unwrap();
    }
    assert_eq!(check(dir.path(), &[]).0, 0);
    assert_eq!(check(dir.path(), &["--fail-on", "info"]).0, 0);
}

#[test]
fn a_repairs_backup_is_not_checked_again() {
    // A broken transcript repaired in place leaves its original beside it as
    // `<file>.rewind-backup-<time>`: checking the folder afterwards checks the repaired file
    // and skips the backup, rather than failing with the findings the repair fixed.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    std::fs::copy(
        repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl"),
        &file,
    )
    .unwrap();
    let (before, _, _) = check(dir.path(), &[]);
    assert_eq!(before, 1, "the broken transcript has findings");
    let out = rewind()
        .arg("repair")
        .arg("--force")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let backups = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".rewind-backup-"))
        .count();
    assert_eq!(backups, 1);
    let (code, stdout, stderr) = check(dir.path(), &["-v"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("a copy rewind made when repairing"),
        "{stdout}"
    );
    // Named explicitly, a backup is still checked.
    let backup = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().contains(".rewind-backup-"))
        .unwrap()
        .path();
    let (code, _, _) = check(dir.path(), &[backup.to_str().unwrap()]);
    assert_eq!(code, 1);
}

#[test]
fn a_folder_with_nothing_to_check_warns_and_can_fail() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# notes\n").unwrap();
    let (code, _, stderr) = check(dir.path(), &["."]);
    assert_eq!(code, 0);
    assert!(
        stderr.contains("warning: no recording was checked in `.` (1 file skipped"),
        "{stderr}"
    );
    let (code, _, stderr) = check(dir.path(), &["--fail-on-empty", "."]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("error: no recording was checked"),
        "{stderr}"
    );
}

#[test]
fn a_home_folder_is_checked_inside_the_agents_hidden_stores() {
    // `rewind check ~` walks into `.claude/projects` and `.codex/sessions`, not into other
    // hidden folders.
    let home = tempfile::tempdir().unwrap();
    let claude = home.path().join(".claude/projects/-home-me-app");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::copy(
        repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl"),
        claude.join("s1.jsonl"),
    )
    .unwrap();
    let cache = home.path().join(".cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::copy(repo("samples/zod-failed-status.log"), cache.join("x.log")).unwrap();
    let (code, stdout, stderr) = check(home.path(), &["--format", "jsonl", "."]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let (findings, summary) = jsonl(&stdout);
    assert_eq!(summary["files"], 1, "{summary}");
    assert!(
        findings.iter().all(|f| f["file"]
            .as_str()
            .unwrap_or_default()
            .contains(".claude/projects")),
        "{stdout}"
    );
}

#[test]
fn diagnose_reads_the_same_configuration_as_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo("samples/zod-failed-status.log"),
        dir.path().join("z.log"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("rewind.toml"),
        "ignore = [\"validation-crash\"]\n[severity]\nsession-error = \"info\"\n",
    )
    .unwrap();
    let rules = |args: &[&str]| -> Vec<(String, String)> {
        let out = rewind()
            .current_dir(dir.path())
            .arg("diagnose")
            .args(["--format", "json"])
            .args(args)
            .arg("z.log")
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        findings(&doc)
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap().to_owned(),
                    f["severity"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let with = rules(&[]);
    assert!(
        !with.iter().any(|(r, _)| r == "validation-crash"),
        "{with:?}"
    );
    assert!(
        with.contains(&("session-error".into(), "info".into())),
        "{with:?}"
    );
    let without = rules(&["--no-config"]);
    assert!(
        without.iter().any(|(r, _)| r == "validation-crash"),
        "{without:?}"
    );
    let flags = rules(&["--no-config", "--severity", "session-error=warning"]);
    assert!(
        flags.contains(&("session-error".into(), "warning".into())),
        "{flags:?}"
    );
}
