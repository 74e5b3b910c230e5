//! Output that fits the terminal, and shows up as it is ready.
//!
//! * At 80 columns no line of the human output is wider than 80 display columns, except the
//!   lines that show the input where it is: a quoted input line (`12 │ …`, cut with `…` to the
//!   width, in characters: an escaped control or a wide character takes more columns), the
//!   snippet's header naming `file:line:col` whole, the marks drawn under quoted bytes
//!   (`────┬────`), a label whose mark sits so far right under the quoted bytes that fewer than
//!   30 columns are left (the label still gets 30), the lines of a fenced example of input in
//!   `rewind explain`, and a suggested command too long for a line, which stands whole on a
//!   line of its own so that it pastes as one command.
//! * At 60 columns nothing panics.
//! * The note counting alike findings left out is wrapped to the width like the other notes.
//! * No progress indicator when standard error is not a terminal.
//! * `check` prints each file's findings as soon as it and the files before it are done.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const SESSION_FILE: &str = "tests/fixtures/transcripts/claude-thinking/kill_tool/886e3896-7ebe-4e64-a23a-94324a296304.jsonl";

/// Every command whose human output is checked, as arguments.
fn commands() -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut samples: Vec<_> = std::fs::read_dir(repo("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    samples.sort();
    assert!(samples.len() >= 5, "the bundled samples are missing");
    for s in &samples {
        out.push(vec!["diagnose".into(), s.display().to_string()]);
    }
    out.push(vec!["check".into(), repo("samples").display().to_string()]);
    out.push(vec![
        "check".into(),
        repo("tests/fixtures/transcripts").display().to_string(),
    ]);
    out.push(vec![
        "sessions".into(),
        repo(SESSION_FILE).display().to_string(),
    ]);
    out.push(vec![
        "sessions".into(),
        repo("tests/fixtures/transcripts").display().to_string(),
    ]);
    out.push(vec![
        "request".into(),
        repo(SESSION_FILE).display().to_string(),
    ]);
    out.push(vec!["rules".into()]);
    let rules = rewind()
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&rules.stdout).unwrap();
    for rule in doc["rules"].as_array().unwrap() {
        out.push(vec![
            "explain".into(),
            rule["name"].as_str().unwrap().into(),
        ]);
    }
    out
}

fn run_at(columns: u16, args: &[String]) -> std::process::Output {
    rewind()
        .current_dir(repo("."))
        .env("COLUMNS", columns.to_string())
        .args(args)
        .output()
        .unwrap()
}

/// Whether `line` may be wider than `width` (see the module's documentation); `fenced` says it
/// is inside a fenced block of `rewind explain`.
fn exempt(line: &str, width: usize, fenced: bool) -> bool {
    let body = line.trim_start();
    let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let quoted = digits > 0
        && body[digits..]
            .trim_start()
            .starts_with(['│', '├', '╰', '┌']);
    let header = body.starts_with("╭─[");
    let marks = body.starts_with('·') && !body.chars().any(char::is_alphanumeric);
    // A label's text starts after its mark; one that starts past `width - 30` is given 30
    // columns.
    let far_label = body.starts_with('·')
        && line.find(char::is_alphanumeric).is_some_and(|at| {
            textwrap::core::display_width(&line[..at]) > width.saturating_sub(30)
        });
    // A suggested command (one code span, alone on its line) is never broken: it must paste
    // as one command. A trailing `)`, `,` or `.` may follow it.
    let span = body.trim_end_matches([')', ',', '.', ';']);
    let command = span.len() > 2
        && span.starts_with('`')
        && span.ends_with('`')
        && !span[1..span.len() - 1].contains('`');
    quoted || header || marks || far_label || fenced || command
}

#[test]
fn human_output_fits_80_columns() {
    let mut checked = 0;
    for args in commands() {
        let out = run_at(80, &args);
        assert_ne!(out.status.code(), Some(2), "rewind {args:?} failed");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let mut fenced = false;
        for line in stdout.lines() {
            let fence = args[0] == "explain" && line.starts_with("```");
            if fence {
                fenced = !fenced;
            }
            let width = textwrap::core::display_width(line);
            assert!(
                width <= 80 || exempt(line, 80, fenced && !fence),
                "`rewind {}` printed a line {width} columns wide at COLUMNS=80:\n{line}\n\nwhole output:\n{stdout}",
                args.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} lines checked");
}

#[test]
fn tables_shrink_or_stack() {
    // Wide enough: a table; at 80 columns the session table cannot keep its words whole, and
    // stacks into `key: value` lines.
    let path = repo("samples/zod-failed-status.log").display().to_string();
    let wide = run_at(200, &["diagnose".into(), path.clone()]);
    let wide = String::from_utf8(wide.stdout).unwrap();
    assert!(wide.contains("┆ steps (started/finished) ┆"), "{wide}");
    let narrow = run_at(80, &["diagnose".into(), path]);
    let narrow = String::from_utf8(narrow.stdout).unwrap();
    assert!(
        narrow.contains(
            "session: ses_2d9e3a1c0ffeQk4VYbq7XN2mTd\n  messages: 1\n  steps (started/finished): 1/0\n"
        ),
        "{narrow}"
    );
    // The rule table shrinks, its text wrapped at spaces; narrower, it stacks.
    for (columns, table) in [(70, true), (60, false)] {
        let rules = run_at(columns, &["rules".into()]);
        let rules = String::from_utf8(rules.stdout).unwrap();
        assert_eq!(rules.starts_with('┌'), table, "{rules}");
        assert!(
            rules
                .lines()
                .all(|l| textwrap::core::display_width(l) <= usize::from(columns)),
            "{rules}"
        );
    }
}

#[test]
fn sixty_columns_never_panic() {
    for args in commands() {
        let out = run_at(60, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code().is_some_and(|c| c <= 2) && !stderr.contains("panicked"),
            "`rewind {}` at COLUMNS=60: {:?}\n{stderr}",
            args.join(" "),
            out.status
        );
    }
}

#[test]
fn the_count_of_alike_findings_is_wrapped_to_the_width() {
    // One step left open with 20 tools running: 20 alike findings, 5 shown, 15 counted.
    let (s, m) = ("ses_000001", "msg_00000001");
    let mut log = format!(
        "{{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_start\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"step-start\"}}}}\n"
    );
    for i in 0..20 {
        log.push_str(&format!(
            "{{\"type\":\"tool_use\",\"timestamp\":{t},\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_{i:08}\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"tool\",\"callID\":\"call_{i:08}\",\"tool\":\"bash\",\"state\":{{\"status\":\"running\",\"input\":{{\"command\":\"ls\"}},\"time\":{{\"start\":{t}}}}}}}}}\n",
            t = i + 2
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("running.log");
    std::fs::write(&path, log).unwrap();
    for columns in [60u16, 80, 200] {
        let out = run_at(columns, &["diagnose".into(), path.display().to_string()]);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let width = usize::from(columns);
        let note = stdout
            .lines()
            .position(|l| l.starts_with("  = note: and 15 more like these ([tool-never-finished],"))
            .unwrap_or_else(|| panic!("no count of alike findings at {columns}:\n{stdout}"));
        let lines: Vec<&str> = stdout.lines().skip(note).take(3).collect();
        let whole = lines
            .iter()
            .take_while(|l| !l.is_empty())
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            whole.ends_with("not shown here (`--format json` lists every one)"),
            "{columns}: {whole}"
        );
        for line in stdout.lines() {
            let shown = textwrap::core::display_width(line);
            assert!(
                shown <= width || exempt(line, width, false),
                "a line {shown} columns wide at COLUMNS={columns}:\n{line}\n\n{stdout}"
            );
        }
    }
}

#[test]
fn the_root_cause_line_names_the_file() {
    let out = run_at(
        240,
        &["diagnose".into(), "samples/zod-failed-status.log".into()],
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("root cause: [validation-crash] ")
            && first.ends_with(" (samples/zod-failed-status.log:113)"),
        "{first}"
    );
    // A file name is the input's text: escaped like any other.
    let dir = tempfile::tempdir().unwrap();
    let hostile = dir.path().join("evil\u{1b}[31mname.log");
    std::fs::copy(repo("samples/zod-failed-status.log"), &hostile).unwrap();
    let out = rewind()
        .current_dir(dir.path())
        .env("COLUMNS", "240")
        .args(["diagnose", "evil\u{1b}[31mname.log"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let first = stdout.lines().next().unwrap();
    assert!(
        first.contains("(evil\\u{1b}[31mname.log:113)") && !first.contains('\u{1b}'),
        "{first:?}"
    );
}

#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    // Standard input gets a byte counter on a terminal; here standard error is a pipe.
    let log = std::fs::read(repo("samples/zod-failed-status.log")).unwrap();
    for format in ["human", "concise", "json"] {
        let out = rewind()
            .args(["diagnose", "--format", format, "-"])
            .write_stdin(log.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            out.stderr.is_empty(),
            "--format {format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = rewind()
        .args(["check", "samples", "tests/fixtures/transcripts"])
        .current_dir(repo("."))
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn check_prints_the_same_bytes_on_any_number_of_threads() {
    let run = |threads: &str| {
        rewind()
            .current_dir(repo("."))
            .args([
                "check",
                "-j",
                threads,
                "samples",
                "tests/fixtures/transcripts",
            ])
            .output()
            .unwrap()
    };
    let one = run("1");
    assert!(one.stdout.len() > 10_000);
    for threads in ["2", "4"] {
        let many = run(threads);
        assert_eq!(one.status.code(), many.status.code());
        assert!(
            one.stdout == many.stdout,
            "-j {threads} printed other bytes than -j 1"
        );
    }
}

#[test]
fn check_prints_a_file_before_the_last_one_is_read() {
    // The first file's findings, as a run over it alone prints them (before the summary table).
    let alone = rewind()
        .current_dir(repo("."))
        .args(["check", "samples/har-streaming-response.har"])
        .output()
        .unwrap();
    let alone = String::from_utf8(alone.stdout).unwrap();
    let first: Vec<String> = alone
        .lines()
        .take_while(|l| !l.starts_with('┌'))
        .map(str::to_owned)
        .collect();
    // Smaller than an output buffer (8 KiB): only a flush sends it before the end.
    assert!(first.len() > 20 && alone.len() < 8 << 10, "{alone}");
    // The last input is standard input, held open: all of the first file's lines must arrive
    // while rewind is still waiting for it.
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("rewind"))
        .current_dir(repo("."))
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .args([
            "check",
            "-j",
            "2",
            "samples/har-streaming-response.har",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let expected = first.clone();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(stdout).lines() {
            all.push(line.unwrap());
            if all.len() == expected.len() {
                let _ = tx.send(all == expected);
            }
        }
        all.join("\n")
    });
    let early = rx.recv_timeout(Duration::from_secs(60));
    // Now the last input arrives (also when the first file's lines never came, so the run ends).
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&std::fs::read(repo("samples/step-without-finish.log")).unwrap())
        .unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    let all = reader.join().unwrap();
    assert_eq!(
        early,
        Ok(true),
        "the first file's findings were not all printed before standard input was read:\n{all}"
    );
    assert_eq!(status.code(), Some(1), "{all}");
    assert!(all.contains("2 files checked"), "{all}");
}
