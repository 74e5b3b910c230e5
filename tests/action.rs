//! The GitHub Action (`action.yml`): its check step, `scripts/action-run.sh`, run as the runner
//! runs it, with the `GITHUB_*` files of a job in a scratch folder. Checks the annotations, the
//! step summary, the SARIF file, the step's outputs and its exit status. Without bash the tests
//! say so and pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::repo;
use serde_json::Value;

/// What one run of the step left behind.
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
    summary: String,
    outputs: String,
    temp: PathBuf,
}

fn bash() -> Option<&'static str> {
    match Command::new("bash").arg("-c").arg("true").status() {
        Ok(s) if s.success() => Some("bash"),
        _ => {
            println!("action: SKIPPED, bash cannot be run here: the action's steps are bash");
            None
        }
    }
}

/// Runs the check step in `dir` with these inputs.
fn run_step(dir: &Path, inputs: &[(&str, &str)]) -> Run {
    let temp = dir.join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let summary = dir.join("step-summary.md");
    let outputs = dir.join("github-output");
    std::fs::write(&summary, "").unwrap();
    std::fs::write(&outputs, "").unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(repo("scripts/action-run.sh"))
        .current_dir(dir)
        .env("REWIND", env!("CARGO_BIN_EXE_rewind"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &outputs)
        .env("RUNNER_TEMP", &temp)
        .env("NO_COLOR", "1");
    for (name, value) in inputs {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        summary: std::fs::read_to_string(&summary).unwrap(),
        outputs: std::fs::read_to_string(&outputs).unwrap(),
        temp,
    }
}

/// A scratch folder with two recordings: one broken, one clean.
fn recordings() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("recordings");
    std::fs::create_dir(&rec).unwrap();
    for name in ["pending-tool-aborted.log", "clean-session.log"] {
        std::fs::copy(repo(&format!("samples/{name}")), rec.join(name)).unwrap();
    }
    dir
}

#[test]
fn findings_fail_the_step_with_annotations_summary_and_sarif() {
    if bash().is_none() {
        return;
    }
    let dir = recordings();
    let run = run_step(dir.path(), &[("INPUT_PATHS", "recordings")]);
    assert_eq!(run.status, 1, "{}\n{}", run.stdout, run.stderr);

    // One annotation per finding.
    let annotations: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(annotations.len(), 2, "{}", run.stdout);
    assert!(annotations[0].starts_with("::error file=recordings/pending-tool-aborted.log,line=1,"));
    assert!(annotations[0].contains("title=rewind%3A step-unclosed::"));

    // The step summary: the totals and every finding.
    assert!(run.summary.starts_with("## rewind\n"), "{}", run.summary);
    assert!(
        run.summary
            .contains("2 file(s) checked, 0 skipped, 0 unreadable: **2 errors**")
    );
    assert!(
        run.summary.contains("| `step-unclosed` | 1 | 0 | 0 |"),
        "{}",
        run.summary
    );
    assert!(run.summary.contains("| `tool-error-dropped` | 1 | 0 | 0 |"));

    // SARIF for code scanning, where the outputs say.
    let sarif = run.temp.join("rewind.sarif");
    assert_eq!(
        run.outputs,
        format!("exit-code=1\nsarif-file={}\n", sarif.display())
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let mut rules: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    rules.sort_unstable();
    assert_eq!(rules, ["step-unclosed", "tool-error-dropped"]);
    let serde_sarif: Result<serde_sarif::sarif::Sarif, _> = serde_json::from_value(doc);
    assert!(serde_sarif.is_ok(), "{serde_sarif:?}");
}

#[test]
fn clean_recordings_pass_and_inputs_reach_rewind() {
    if bash().is_none() {
        return;
    }
    let dir = recordings();
    // Only the clean one, with SARIF off.
    let run = run_step(
        dir.path(),
        &[
            ("INPUT_PATHS", "recordings/clean-session.log"),
            ("INPUT_SARIF", "false"),
        ],
    );
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("::error"), "{}", run.stdout);
    assert!(run.summary.contains("1 file(s) checked"), "{}", run.summary);
    assert_eq!(run.outputs, "exit-code=0\nsarif-file=\n");
    assert!(!run.temp.join("rewind.sarif").exists());

    // The config and more arguments: both rules ignored, so the broken one passes.
    std::fs::write(dir.path().join("ci.toml"), "ignore = [\"step-unclosed\"]\n").unwrap();
    let sarif = dir.path().join("out/findings.sarif");
    std::fs::create_dir_all(sarif.parent().unwrap()).unwrap();
    let run = run_step(
        dir.path(),
        &[
            (
                "INPUT_PATHS",
                "recordings/pending-tool-aborted.log\nrecordings/clean-session.log",
            ),
            ("INPUT_CONFIG", "ci.toml"),
            ("INPUT_ARGS", "--ignore tool-error-dropped"),
            ("INPUT_SARIF_FILE", sarif.to_str().unwrap()),
        ],
    );
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.summary.contains("2 file(s) checked"), "{}", run.summary);
    assert_eq!(
        run.outputs,
        format!("exit-code=0\nsarif-file={}\n", sarif.display())
    );

    // fail-on: a warning fails the step when asked.
    std::fs::write(
        dir.path().join("warn.toml"),
        "[severity]\nstep-unclosed = \"warning\"\ntool-error-dropped = \"warning\"\n",
    )
    .unwrap();
    let lenient = run_step(
        dir.path(),
        &[("INPUT_PATHS", "recordings"), ("INPUT_CONFIG", "warn.toml")],
    );
    assert_eq!(lenient.status, 0, "{}", lenient.stderr);
    assert!(lenient.stdout.contains("::warning "), "{}", lenient.stdout);
    let strict = run_step(
        dir.path(),
        &[
            ("INPUT_PATHS", "recordings"),
            ("INPUT_CONFIG", "warn.toml"),
            ("INPUT_FAIL_ON", "warning"),
        ],
    );
    assert_eq!(strict.status, 1, "{}", strict.stderr);
}

#[test]
fn an_unreadable_input_or_config_fails_with_status_2() {
    if bash().is_none() {
        return;
    }
    let dir = recordings();
    let run = run_step(dir.path(), &[("INPUT_PATHS", "recordings/nowhere.log")]);
    assert_eq!(run.status, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("nowhere.log"), "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("nowhere.log").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(run.outputs.starts_with("exit-code=2\n"), "{}", run.outputs);

    let run = run_step(
        dir.path(),
        &[
            ("INPUT_PATHS", "recordings"),
            ("INPUT_CONFIG", "missing.toml"),
        ],
    );
    assert_eq!(run.status, 2, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.outputs, "exit-code=2\nsarif-file=\n");
}

/// action.yml runs this script with every input it declares, and uploads what it wrote.
#[test]
fn the_action_passes_its_inputs_to_the_script() {
    let action = std::fs::read_to_string(repo("action.yml")).unwrap();
    assert!(action.contains("using: composite"));
    assert!(action.contains("run: bash \"$GITHUB_ACTION_PATH/scripts/action-run.sh\""));
    for input in ["paths", "config", "fail-on", "args", "sarif", "sarif-file"] {
        assert!(action.contains(&format!("\n  {input}:\n")), "input {input}");
        let variable = format!("INPUT_{}", input.to_uppercase().replace('-', "_"));
        assert!(
            action.contains(&format!("{variable}: ${{{{ inputs.{input} }}}}")),
            "{variable}"
        );
    }
    assert!(action.contains("uses: github/codeql-action/upload-sarif@"));
    assert!(action.contains("sarif_file: ${{ steps.check.outputs.sarif-file }}"));
    assert!(action.contains("cargo install --locked --path \"$GITHUB_ACTION_PATH\""));
}

/// The workflow of docs/ci.md: the session a `claude-code-action` run leaves in the runner's
/// temporary folder, checked where it is.
#[test]
fn a_claude_code_action_session_gates_the_job() {
    if bash().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    let temp = dir.path().join("_temp");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&temp).unwrap();
    let session = temp.join("claude-execution-output.json");
    std::fs::copy(
        repo("tests/fixtures/ci/kill-tool/claude-execution-output.json"),
        &session,
    )
    .unwrap();
    let run = run_step(
        &workspace,
        &[
            ("INPUT_PATHS", session.to_str().unwrap()),
            ("INPUT_SARIF", "false"),
        ],
    );
    assert_eq!(run.status, 1, "{}\n{}", run.stdout, run.stderr);
    let shown = session.display().to_string();
    assert!(
        run.stdout.starts_with(&format!(
            "::error file={shown},line=165,col=17,endLine=165,endColumn=33,title=rewind%3A tool-never-finished::"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.summary
            .contains("1 file(s) checked, 0 skipped, 0 unreadable: **1 error**"),
        "{}",
        run.summary
    );
    assert!(
        run.summary
            .contains("| `tool-never-finished` | 1 | 0 | 0 |")
    );
    assert_eq!(run.outputs, "exit-code=1\nsarif-file=\n");

    // A run that ended well passes.
    std::fs::copy(
        repo("tests/fixtures/ci/healthy-tool/claude-execution-output.json"),
        &session,
    )
    .unwrap();
    let run = run_step(&workspace, &[("INPUT_PATHS", session.to_str().unwrap())]);
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.outputs.starts_with("exit-code=0\n"), "{}", run.outputs);
}
