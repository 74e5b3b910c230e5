//! Text from the input is hostile: a recorded string must not reach a reader's terminal with
//! its control sequences live. Each case plants a payload in a sample and checks the printed
//! report for raw escapes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{repo, rewind};

/// OSC 52 (write the clipboard), BEL, a screen clear, the bidirectional override, a line
/// separator and a left-to-right mark, JSON-escaped as a log would carry them.
const PAYLOAD: &str = r"w\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u202e\u2028\u200e";

/// The raw characters none of the human output may carry.
const RAW: &[char] = &[
    '\u{1b}', '\u{7}', '\u{202e}', '\u{2028}', '\u{200e}', '\u{85}',
];

fn hostile_log() -> tempfile::NamedTempFile {
    let text = std::fs::read_to_string(repo("samples/pending-tool-aborted.log")).unwrap();
    assert!(text.contains(r#""tool":"write""#) || text.contains(r#""tool": "write""#));
    let planted = text
        .replace(r#""tool":"write""#, &format!(r#""tool":"{PAYLOAD}""#))
        .replace(r#""tool": "write""#, &format!(r#""tool": "{PAYLOAD}""#));
    let file = tempfile::Builder::new().suffix(".log").tempfile().unwrap();
    std::fs::write(file.path(), planted).unwrap();
    file
}

#[test]
fn the_root_cause_line_escapes_what_it_quotes() {
    let log = hostile_log();
    let out = rewind().arg("diagnose").arg(log.path()).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let first = stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("root cause:"), "{first}");
    assert!(
        first.contains(r"\u{1b}"),
        "the escape is shown escaped: {first}"
    );
    for (n, line) in stdout.lines().enumerate() {
        assert!(
            !line.contains(RAW),
            "line {} carries a raw control or bidi character: {line:?}",
            n + 1
        );
    }
}

#[cfg(unix)]
#[test]
fn file_names_are_escaped_in_every_human_and_ci_printer() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    // An OSC 8 hyperlink around the name, and a bidirectional override.
    let name =
        std::ffi::OsStr::from_bytes(b"x\x1b]8;;https:e.x\x07name\x1b]8;;\x07\xe2\x80\xae.log");
    let path = dir.path().join(name);
    std::fs::copy(repo("samples/pending-tool-aborted.log"), &path).unwrap();
    let runs: [&[&str]; 3] = [
        &["diagnose"],
        &["check", "--format", "github"],
        &["check", "--format", "human"],
    ];
    for args in runs {
        let out = rewind().args(args).arg(&path).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("name"), "{args:?}: {text}");
        assert!(
            !text.contains(RAW),
            "{args:?} printed a raw control or bidi character: {text:?}"
        );
    }
}

/// What is appended to every string of a fixture: a screen clear, OSC 52 (write the clipboard),
/// an OSC 8 hyperlink, BEL, a C1 CSI, the bidirectional override, the line and paragraph
/// separators, NEL, a left-to-right mark, and Markdown and HTML that would change a page: a
/// backtick, an image, a link, a table cell's end and a newline that would end a table row.
const EVERY_PAYLOAD: &str = "\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]8;;https://e.x\u{7}ln\u{1b}]8;;\u{7}\u{7}\u{9b}31m\u{202e}\u{2028}\u{2029}\u{85}\u{200e}`<img src=x>[link](https://e.x)|*_\n| a | b |";

/// The same payload as a file name carries it (no `/`): the name of every planted copy.
const NAME_PAYLOAD: &str =
    "n\u{1b}[2J\u{7}\u{9b}\u{202e}\u{2028}\u{85}`<img src=x>[l](x)|*_\n| a |";

/// Raw characters no output of any format may carry: controls (ESC, BEL, C1, NEL), bidi
/// controls, the line and paragraph separators.
fn carries_raw(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
            || matches!(
                c,
                '\u{200e}'
                    | '\u{200f}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
            )
    })
}

/// The discriminators a record is recognised by (left alone in the second planting, so the
/// records are read as what they are and more of the input reaches the findings).
const DISCRIMINATORS: &[&str] = &[
    "type",
    "role",
    "status",
    "subtype",
    "object",
    "event",
    "level",
    "service",
    "state",
    "timestamp",
    "version",
    "cli_version",
    "originator",
    "source",
    "reason",
    "finish",
];

fn plant_value(v: &mut serde_json::Value, spare: &[&str]) {
    use serde_json::Value;
    match v {
        Value::String(s) => s.push_str(EVERY_PAYLOAD),
        Value::Array(items) => items.iter_mut().for_each(|i| plant_value(i, spare)),
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                if !(item.is_string() && spare.contains(&k.as_str())) {
                    plant_value(item, spare);
                }
            }
        }
        _ => {}
    }
}

/// `text` with the payload appended to every JSON string value (keys left alone): the whole
/// text when it is one JSON document, else each line's JSON (after any prefix, `data: `).
fn plant(text: &str, spare: &[&str]) -> String {
    let trimmed = text.trim_start();
    if trimmed.starts_with(['{', '['])
        && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text)
    {
        plant_value(&mut v, spare);
        return serde_json::to_string_pretty(&v).unwrap() + "\n";
    }
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let planted = body.find('{').and_then(|at| {
            let mut v = serde_json::from_str::<serde_json::Value>(&body[at..]).ok()?;
            plant_value(&mut v, spare);
            Some(format!(
                "{}{}",
                &body[..at],
                serde_json::to_string(&v).unwrap()
            ))
        });
        match planted {
            Some(p) => {
                out.push_str(&p);
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The samples and one fixture of each other kind of input.
fn hostile_fixtures() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(repo("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for rel in [
        "tests/fixtures/agent-log-body-preview.log",
        "tests/fixtures/checks/loop-exited-early.log",
        "tests/fixtures/stream/provider-error.sse",
        "tests/fixtures/transcripts/claude-orphan-tool.jsonl",
        "tests/fixtures/transcripts/codex-interrupted.jsonl",
        "tests/fixtures/copilot/killed-tool.jsonl",
        "tests/fixtures/copilot/raw-newline.jsonl",
        "tests/fixtures/checks/tool-use-without-result.json",
    ] {
        files.push(repo(rel));
    }
    files
}

/// The lines a step summary may have: its heading, its counts, table rows, unreadable files.
fn check_step_summary(md: &str, what: &str) {
    assert!(
        !md.contains("<img"),
        "{what}: raw HTML in the summary:\n{md}"
    );
    assert!(!md.contains("]("), "{what}: a link in the summary:\n{md}");
    let mut columns = None;
    for line in md.lines() {
        let cells = |l: &str| l.replace("\\|", "").matches('|').count();
        if line.starts_with('|') {
            let n = cells(line);
            assert_eq!(
                *columns.get_or_insert(n),
                n,
                "{what}: a row with other cells: {line:?}\n{md}"
            );
            continue;
        }
        columns = None;
        let known = line.is_empty()
            || line == "## rewind"
            || line.starts_with(|c: char| c.is_ascii_digit())
            || line.starts_with("- unreadable ");
        assert!(
            known,
            "{what}: a line the summary does not write: {line:?}\n{md}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_payload_in_every_string_of_every_fixture_reaches_no_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let mut escaped_in = std::collections::BTreeSet::new();
    for fixture in hostile_fixtures() {
        let text = std::fs::read_to_string(&fixture).unwrap();
        let file_name = fixture.file_name().unwrap().to_string_lossy().into_owned();
        for (variant, spare) in [("all", &[][..]), ("values", DISCRIMINATORS)] {
            let planted = dir
                .path()
                .join(format!("{variant}-{NAME_PAYLOAD}-{file_name}"));
            std::fs::write(&planted, plant(&text, spare)).unwrap();
            for format in [
                "human", "concise", "json", "jsonl", "sarif", "junit", "github", "html",
            ] {
                let what = format!("{file_name} ({variant}) as {format}");
                let summary = dir.path().join("summary.md");
                let _ = std::fs::remove_file(&summary);
                let out = rewind()
                    .env("GITHUB_STEP_SUMMARY", &summary)
                    .args(["diagnose", "--format", format])
                    .arg(&planted)
                    .output()
                    .unwrap();
                let stdout = String::from_utf8(out.stdout).unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                for (stream, text) in [("stdout", &*stdout), ("stderr", &*stderr)] {
                    if let Some(c) = carries_raw(text) {
                        panic!("{what}: {stream} carries a raw {c:?}:\n{text}");
                    }
                }
                match format {
                    "json" | "sarif" => {
                        let _: serde_json::Value = serde_json::from_str(&stdout)
                            .unwrap_or_else(|e| panic!("{what}: {e}\n{stdout}"));
                        if stdout.contains("\\u202e") {
                            escaped_in.insert(format);
                        }
                    }
                    "jsonl" => {
                        for line in stdout.lines() {
                            let _: serde_json::Value = serde_json::from_str(line)
                                .unwrap_or_else(|e| panic!("{what}: {e}\n{line}"));
                        }
                    }
                    "junit" if stdout.contains("&#x202E;") => {
                        escaped_in.insert(format);
                    }
                    "github" => {
                        for line in stdout.lines() {
                            assert!(line.starts_with("::"), "{what}: not a command: {line:?}");
                        }
                        let md = std::fs::read_to_string(&summary).unwrap();
                        if let Some(c) = carries_raw(&md) {
                            panic!("{what}: the step summary carries a raw {c:?}:\n{md}");
                        }
                        check_step_summary(&md, &what);
                    }
                    "html" => assert!(!stdout.contains("<img"), "{what}: raw HTML"),
                    _ => {}
                }
            }
        }
    }
    assert_eq!(
        escaped_in,
        ["json", "junit", "sarif"].into_iter().collect(),
        "the bidi override is written escaped"
    );
}

#[test]
fn a_baseline_file_carries_no_raw_control_either() {
    let log = hostile_log();
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let out = rewind()
        .args(["check", "--write-baseline"])
        .arg(&baseline)
        .arg(log.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert_eq!(carries_raw(&text), None, "{text}");
    assert!(
        text.contains("\\u202e"),
        "the payload is in it, escaped: {text}"
    );
    // And it still reads back: the same findings are baselined.
    let again = rewind()
        .args(["check", "--baseline"])
        .arg(&baseline)
        .arg(log.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{again:?}");
}

#[cfg(unix)]
#[test]
fn the_other_commands_write_json_with_dangerous_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // Ids are left alone too: a session is listed and repaired only when its ids are ones.
    let spare = [
        DISCRIMINATORS,
        &[
            "id",
            "uuid",
            "parentUuid",
            "sessionId",
            "sessionID",
            "messageID",
            "parentID",
            "callID",
        ],
    ]
    .concat();
    let runs: [(&str, &[&str]); 3] = [
        (
            "checks/export-healthy.json",
            &["sessions", "--format", "json"],
        ),
        (
            "checks/export-healthy.json",
            &["request", "--format", "json"],
        ),
        (
            "transcripts/claude-orphan-tool.jsonl",
            &["repair", "--dry-run", "--format", "json"],
        ),
    ];
    for (fixture, args) in runs {
        let text = std::fs::read_to_string(repo(&format!("tests/fixtures/{fixture}"))).unwrap();
        let planted = dir
            .path()
            .join(format!("{NAME_PAYLOAD}-{}", fixture.replace('/', "-")));
        std::fs::write(&planted, plant(&text, &spare)).unwrap();
        let out = rewind().args(args).arg(&planted).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        if let Some(c) = carries_raw(&stdout) {
            panic!("{args:?} carries a raw {c:?}:\n{stdout}");
        }
        let _: serde_json::Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}\n{stdout}"));
        assert!(stdout.contains("\\u202e"), "{args:?}: {stdout}");
    }
}
