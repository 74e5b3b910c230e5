//! The command line's habits: colour from the flag and the environment, output files, quiet
//! runs, one-line findings, statistics, suggestions for mistyped rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

/// Runs with no colour variable set (the helper sets `NO_COLOR`) and `env` added.
fn colored(env: &[(&str, &str)], args: &[&str]) -> bool {
    let mut cmd = rewind();
    for var in ["NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains('\u{1b}')
}

#[test]
fn colour_follows_the_flag_then_the_environment() {
    let broken = repo("samples/zod-failed-status.log");
    let broken = broken.to_str().unwrap();
    let sse = repo("samples/tanstack-tool-error.sse");
    let sse = sse.to_str().unwrap();
    let dir = repo("samples");
    let dir = dir.to_str().unwrap();
    for args in [
        vec!["diagnose", broken],
        vec!["check", dir],
        vec!["replay", sse],
    ] {
        // Not a terminal: no colour by default.
        assert!(!colored(&[], &args), "{args:?}");
        for force in [("FORCE_COLOR", "1"), ("CLICOLOR_FORCE", "1")] {
            assert!(colored(&[force], &args), "{force:?} {args:?}");
        }
        assert!(!colored(&[("FORCE_COLOR", "0")], &args), "{args:?}");
        assert!(!colored(&[("FORCE_COLOR", "")], &args), "{args:?}");
        assert!(
            !colored(&[("NO_COLOR", "1"), ("FORCE_COLOR", "1")], &args),
            "NO_COLOR first: {args:?}"
        );
        assert!(
            !colored(
                &[("CLICOLOR", "0")],
                &[&["--color", "auto"], &args[..]].concat()
            ),
            "{args:?}"
        );
        // The flag wins over the environment.
        let always = [&["--color", "always"], &args[..]].concat();
        assert!(colored(&[("NO_COLOR", "1"), ("CLICOLOR", "0")], &always));
        let never = [&["--color", "never"], &args[..]].concat();
        assert!(!colored(
            &[("FORCE_COLOR", "1"), ("CLICOLOR_FORCE", "1")],
            &never
        ));
    }
}

#[test]
fn output_file_takes_the_report() {
    let broken = repo("samples/zod-failed-status.log");
    let dir = tempfile::tempdir().unwrap();
    for (command, input) in [("diagnose", broken.clone()), ("check", broken.clone())] {
        for (format, needle) in [
            ("json", "\"findings\""),
            ("html", "<html"),
            ("human", "error"),
        ] {
            let path = dir.path().join(format!("{command}.{format}"));
            let out = rewind()
                .args([command, "--format", format, "-o"])
                .arg(&path)
                .arg(&input)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{command} {format}");
            assert!(out.stdout.is_empty(), "{command} {format}: stdout");
            let written = std::fs::read_to_string(&path).unwrap();
            assert!(written.contains(needle), "{command} {format}: {written}");
            assert!(!written.contains('\u{1b}'), "a file is never coloured");
        }
    }
    // A file that cannot be written: one line, exit 2.
    let out = rewind()
        .args(["diagnose", "--output-file"])
        .arg(dir.path().join("no/such/dir/report.json"))
        .arg(&broken)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot write the report"), "{stderr}");
}

/// Runs `rewind ARGS` with standard output on a pseudo-terminal (through `script`), when there
/// is one to be had; returns the exit code and what was printed.
fn on_terminal(args: &str) -> Option<(i32, String)> {
    let bin = assert_cmd::cargo::cargo_bin("rewind");
    let out = std::process::Command::new("script")
        .args(["-qec", &format!("{} {args}", bin.display()), "/dev/null"])
        .env("NO_COLOR", "1")
        .output()
        .ok()?;
    if !out.status.success() && out.status.code() != Some(2) {
        return None;
    }
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[test]
fn html_is_not_dumped_into_a_terminal() {
    let broken = repo("samples/zod-failed-status.log");
    let Some((code, printed)) =
        on_terminal(&format!("diagnose --format html {}", broken.display()))
    else {
        eprintln!("no pseudo-terminal here: skipped");
        return;
    };
    assert_eq!(code, 2, "{printed}");
    assert!(!printed.contains("<html"), "{printed}");
    assert!(printed.contains("-o report.html"), "{printed}");
    assert_eq!(printed.trim().lines().count(), 1, "{printed}");
    // Into a pipe it is written as ever.
    let out = rewind()
        .args(["diagnose", "--format", "html"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("<html"));
}

fn output(args: &[&str], input: &std::path::Path) -> (i32, String, String) {
    let out = rewind().args(args).arg(input).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn quiet_prints_only_the_findings() {
    let broken = repo("samples/zod-failed-status.log");
    for command in ["diagnose", "check"] {
        let (code, loud, _) = output(&[command], &broken);
        let (quiet_code, quiet, stderr) = output(&[command, "-q"], &broken);
        assert_eq!(code, quiet_code, "{command}: the exit status is the same");
        assert!(stderr.is_empty(), "{stderr}");
        assert!(loud.contains('┌') || loud.contains("checked"), "{loud}");
        assert!(
            !quiet.contains('┌') && !quiet.contains('└'),
            "no table: {quiet}"
        );
        assert!(
            !quiet.contains("checked") && !quiet.contains("total:"),
            "{quiet}"
        );
        assert!(quiet.contains("step-unclosed"), "{quiet}");
        // Every line of the quiet output is in the full one, in the same order.
        assert!(loud.starts_with(&quiet), "{command}:\n{quiet}\n---\n{loud}");
        let (_, concise, _) = output(&[command, "--quiet", "--format", "concise"], &broken);
        assert!(concise.lines().all(|l| l.contains("] ")), "{concise}");
    }
    // A clean file: nothing at all, exit 0.
    let (code, quiet, _) = output(&["diagnose", "-q"], &repo("samples/clean-session.log"));
    assert_eq!((code, quiet.as_str()), (0, ""));
}

#[test]
fn concise_is_one_line_per_finding() {
    let broken = repo("samples/zod-failed-status.log");
    let (code, json) = diagnose_json(&broken, &[]);
    let expected = findings(&json);
    for command in ["diagnose", "check"] {
        let (concise_code, out, _) = output(&[command, "--format", "concise"], &broken);
        assert_eq!(code, concise_code);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), expected.len() + 1, "{out}");
        for (line, f) in lines.iter().zip(&expected) {
            let want = format!(
                "{}:{}:{}: {}[{}] ",
                f["file"].as_str().unwrap(),
                f["line"],
                f["column"],
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap()
            );
            assert!(line.starts_with(&want), "{line} / {want}");
        }
        assert!(lines.last().unwrap().contains("error"), "totals: {out}");
    }
    // The message is escaped: a log cannot drive the terminal, and a finding is one line.
    let log = "{\"type\":\"error\",\"timestamp\":1,\"sessionID\":\"ses_1\",\"error\":\"boom\\n\\u001b[2J \\u202eevil\"}\n";
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), log).unwrap();
    let (_, out, _) = output(&["diagnose", "--format", "concise", "-q"], f.path());
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(!out.is_empty());
    for line in out.lines() {
        assert!(line.contains("]"), "one line per finding: {out}");
    }
}

#[test]
fn statistics_count_findings_per_rule() {
    let broken = repo("samples/zod-failed-status.log");
    let (code, json) = diagnose_json(&broken, &[]);
    let all = findings(&json);
    for command in ["diagnose", "check"] {
        let (stat_code, out, _) = output(&[command, "--statistics"], &broken);
        assert_eq!(code, stat_code, "the exit status is the same");
        let mut counts = Vec::new();
        for line in out.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words.len(), 3, "{line}");
            let n: usize = words[0].parse().unwrap();
            let of_rule = all
                .iter()
                .filter(|f| f["rule"] == words[1] && f["severity"] == words[2])
                .count();
            assert_eq!(n, of_rule, "{line}");
            counts.push(n);
        }
        assert_eq!(counts.iter().sum::<usize>(), all.len(), "{out}");
        assert!(counts.windows(2).all(|w| w[0] >= w[1]), "most first: {out}");
        let (_, out, _) = output(&[command, "--statistics", "--format", "json"], &broken);
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["version"], 1);
        let total: u64 = doc["statistics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["count"].as_u64().unwrap())
            .sum();
        assert_eq!(total as usize, all.len());
    }
}

#[test]
fn a_mistyped_rule_gets_a_suggestion() {
    let clean = repo("samples/clean-session.log");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rewind.toml");
    std::fs::write(&config, "ignore = [\"sesion-error\"]\n").unwrap();
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (
            vec![
                "diagnose".into(),
                "--select".into(),
                "tool-never-finishd".into(),
            ],
            "tool-never-finishd",
            "tool-never-finished",
        ),
        (
            vec!["check".into(), "--ignore".into(), "step-unclosd".into()],
            "step-unclosd",
            "step-unclosed",
        ),
        (
            vec![
                "diagnose".into(),
                "--severity".into(),
                "step-uncloed=info".into(),
            ],
            "step-uncloed",
            "step-unclosed",
        ),
        (
            vec![
                "diagnose".into(),
                "--config".into(),
                config.display().to_string(),
            ],
            "sesion-error",
            "session-error",
        ),
    ];
    for (args, typed, meant) in cases {
        let (code, _, stderr) =
            output(&args.iter().map(String::as_str).collect::<Vec<_>>(), &clean);
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("unknown rule `{typed}`")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("did you mean `{meant}`?")),
            "{stderr}"
        );
    }
    let out = rewind()
        .args(["explain", "tool-never-finishd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: unknown rule `tool-never-finishd`; did you mean `tool-never-finished`?"
    );
    // Nothing close: where the rules are listed.
    let out = rewind().args(["explain", "no-such-rule"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("did you mean"), "{stderr}");
    assert!(stderr.contains("`rewind rules` lists them"), "{stderr}");
}

#[test]
fn a_folder_that_is_not_a_store_points_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = output(&["diagnose"], dir.path());
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let shown = dir.path().display().to_string();
    assert!(
        stderr.contains(&format!("run `rewind check {shown}`")),
        "{stderr}"
    );
}

#[test]
fn help_names_every_client_repair_works_on() {
    for args in [&["--help"][..], &["repair", "--help"]] {
        let out = rewind().args(args).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        let line = help
            .lines()
            .find(|l| l.contains("Repair "))
            .unwrap_or_else(|| panic!("{help}"));
        for client in ["OpenCode", "Claude Code", "Codex"] {
            assert!(line.contains(client), "{client}: {line}");
        }
    }
}

#[test]
fn completions_offer_rule_names_and_no_hidden_option() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = rewind().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            !script.contains("forget-from-parts"),
            "{shell}: a hidden option"
        );
        for shown in ["select", "output-file", "color", "diagnose", "explain"] {
            assert!(script.contains(shown), "{shell}: {shown}");
        }
        // Elvish's and PowerShell's scripts complete no values at all.
        if ["bash", "zsh", "fish"].contains(&shell) {
            assert!(
                script.contains("tool-never-finished"),
                "{shell}: rule names"
            );
        }
    }
    // The rule names are not dumped into `--help`.
    let out = rewind().args(["diagnose", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(!help.contains("tool-never-finished"), "{help}");
}

#[test]
fn every_json_document_has_the_envelope() {
    let store = repo("tests/fixtures/checks/step-merged.json");
    let store = store.to_str().unwrap();
    let log = repo("samples/zod-failed-status.log");
    let log = log.to_str().unwrap();
    let sse = repo("samples/tanstack-tool-error.sse");
    let sse = sse.to_str().unwrap();
    let transcript = repo("tests/fixtures/transcripts/claude-api-error-torn.jsonl");
    let transcript = transcript.to_str().unwrap();
    let runs: [&[&str]; 8] = [
        &["diagnose", log],
        &["check", log],
        &["replay", sse],
        &["sessions", store],
        &["request", store],
        &["repair", "--dry-run", transcript],
        &["repair", "--dry-run", store],
        &["rules"],
    ];
    for args in runs {
        let out = rewind()
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let keys: Vec<&String> = doc.as_object().unwrap().keys().take(2).collect();
        assert_eq!(keys, ["version", "tool"], "{args:?}: the envelope first");
        assert_eq!(doc["version"], 1, "{args:?}");
        assert_eq!(doc["tool"]["name"], "rewind", "{args:?}");
        assert_eq!(
            doc["tool"]["version"],
            env!("CARGO_PKG_VERSION"),
            "{args:?}"
        );
    }
}

#[test]
fn error_lines_are_coloured_for_standard_error() {
    let broken = repo("samples/zod-failed-status.log");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.log");
    for command in ["diagnose", "check"] {
        for (env, flag, coloured) in [
            (Some(("FORCE_COLOR", "1")), "auto", true),
            (Some(("FORCE_COLOR", "1")), "never", false),
            (None, "auto", false),
            (None, "always", true),
        ] {
            let mut cmd = rewind();
            cmd.env_remove("NO_COLOR");
            if let Some((k, v)) = env {
                cmd.env(k, v);
            }
            // The report goes to a file (never coloured); the error line still follows the choice.
            let out = cmd
                .args(["--color", flag, command, "-o"])
                .arg(dir.path().join("report.txt"))
                .arg(&broken)
                .arg(&missing)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{command}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("missing.log"), "{stderr}");
            assert_eq!(
                stderr.contains('\u{1b}'),
                coloured,
                "{command} {env:?} {flag}: {stderr:?}"
            );
            let report = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
            assert!(
                !report.contains('\u{1b}'),
                "{command}: the file is not coloured"
            );
        }
    }
}

#[test]
fn the_report_never_overwrites_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.log");
    std::fs::copy(repo("samples/zod-failed-status.log"), &log).unwrap();
    let before = std::fs::read(&log).unwrap();
    for args in [
        vec!["diagnose".to_owned(), log.display().to_string()],
        vec!["check".to_owned(), dir.path().display().to_string()],
    ] {
        let out = rewind().args(&args).arg("-o").arg(&log).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("is an input"), "{stderr}");
        assert_eq!(
            std::fs::read(&log).unwrap(),
            before,
            "{args:?}: the input is intact"
        );
    }
}
