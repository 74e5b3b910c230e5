//! Robustness: bad bytes never panic, pipes are read once and never hang, truncated inputs are
//! diagnosed up to the cut, error messages stay short.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn temp_with(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f
}

/// Runs rewind with `args` and `stdin`, returning (status, stdout, stderr); fails on a panic.
fn run_with_stdin(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let out = rewind().args(args).write_stdin(stdin).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = rewind().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn rules_of(stdout: &str) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_str(stdout).unwrap();
    findings(&doc)
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
}

// 1. Byte offsets inside multi-byte characters.

#[test]
fn invalid_json_ending_inside_a_multibyte_character_does_not_panic() {
    // serde_json reports the error at a byte column inside `é`.
    let f = temp_with(b"data: {\"a\":\"\xc3\xa9\n\n");
    let (code, stdout, stderr) = run(&[
        "diagnose".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        f.path().as_os_str(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        rules_of(&stdout).contains(&"sse-invalid-json".to_owned()),
        "{stdout}"
    );
    let (code, _, stderr) = run(&["replay".as_ref(), f.path().as_os_str()]);
    assert_eq!(code, 1, "{stderr}");
    let (code, _, stderr) = run(&["check".as_ref(), f.path().as_os_str()]);
    assert_eq!(code, 1, "{stderr}");
}

// 2. Standard input, FIFOs, process substitution.

#[test]
fn a_capture_on_standard_input_is_diagnosed_like_the_file() {
    let sample = std::fs::read(repo("samples/sse-concatenated-chunk.sse")).unwrap();
    let (code, from_file, _) = run(&[
        "diagnose".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        repo("samples/sse-concatenated-chunk.sse").as_os_str(),
    ]);
    assert_eq!(code, 1);
    for path in ["-", "/dev/stdin"] {
        let (code, stdout, stderr) =
            run_with_stdin(&["diagnose", "--format", "json", path], &sample);
        assert_eq!(code, 1, "{path}: {stderr}");
        assert_eq!(rules_of(&stdout), rules_of(&from_file), "{path}");
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert!(findings(&doc).iter().all(|f| f["file"] == path), "{stdout}");
    }
    // Human output reads lines back from the input to show them.
    let (code, stdout, _) = run_with_stdin(&["diagnose", "-"], &sample);
    assert_eq!(code, 1);
    assert!(stdout.contains("╭─[-:"), "{stdout}");
    // replay and check take `-` too, and `-` twice is the same input.
    let (code, stdout, _) = run_with_stdin(&["replay", "-"], &sample);
    assert_eq!(code, 1, "{stdout}");
    let (code, stdout, stderr) = run_with_stdin(&["check", "-", "/dev/stdin"], &sample);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("2 files checked"), "{stdout}");
}

#[test]
fn a_database_on_standard_input_is_read_from_a_private_copy() {
    let db = tempfile::tempdir().unwrap();
    let path = db.path().join("opencode.db");
    common::opencode::build_db(&path, &common::opencode::sessions());
    let bytes = std::fs::read(&path).unwrap();
    let (code, stdout, stderr) = run_with_stdin(&["sessions", "-"], &bytes);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("ses_"), "{stdout}");
}

/// Runs rewind on a FIFO that a thread fills, failing if it has not finished in 30 s.
fn run_on_fifo(args: &[&str], content: &'static [u8]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("capture.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("rewind"))
        .env("NO_COLOR", "1")
        .args(args)
        .arg(&fifo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let writer_path = fifo.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_writer = stop.clone();
    let writer = std::thread::spawn(move || {
        // Open without blocking (it fails until rewind opens the FIFO for reading), so the
        // thread ends even when rewind never opens it.
        use std::os::unix::fs::OpenOptionsExt;
        const O_NONBLOCK: i32 = 0o4000;
        while !stop_writer.load(std::sync::atomic::Ordering::Relaxed) {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(O_NONBLOCK)
                .open(&writer_path)
            {
                Ok(mut w) => {
                    let _ = w.write_all(content);
                    return;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            panic!("rewind {args:?} on a FIFO did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

const CAPTURE: &[u8] = include_bytes!("../samples/sse-concatenated-chunk.sse");

#[test]
fn no_command_hangs_on_a_fifo() {
    let (code, stdout, stderr) = run_on_fifo(&["diagnose", "--format", "json"], CAPTURE);
    assert_eq!(code, 1, "{stderr}");
    assert!(rules_of(&stdout).contains(&"sse-concatenated-events".to_owned()));
    let (code, _, stderr) = run_on_fifo(&["replay"], CAPTURE);
    assert_eq!(code, 1, "{stderr}");
    let (code, _, stderr) = run_on_fifo(&["check"], CAPTURE);
    assert_eq!(code, 1, "{stderr}");
    let (code, stdout, stderr) = run_on_fifo(&["sessions"], CAPTURE);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("capture"), "{stdout}");
    let (code, _, stderr) = run_on_fifo(&["repair", "--dry-run"], CAPTURE);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
}

#[test]
fn process_substitution_is_read_once() {
    let sample = repo("samples/zod-failed-status.log");
    let script = format!(
        "{} diagnose --format json <(cat {})",
        assert_cmd::cargo::cargo_bin("rewind").display(),
        sample.display()
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rules = rules_of(&String::from_utf8_lossy(&out.stdout));
    assert!(rules.contains(&"validation-crash".to_owned()), "{rules:?}");
}

// 3. Inputs cut inside a multi-byte character.

#[test]
fn a_log_cut_inside_a_multibyte_character_is_diagnosed_up_to_the_cut() {
    let log = std::fs::read(repo("samples/clean-session.log")).unwrap();
    // Every cut inside the first few multi-byte characters.
    let cuts: Vec<usize> = (0..log.len())
        .filter(|&i| log[i] >= 0xC0)
        .take(4)
        .map(|i| i + 1)
        .collect();
    assert!(!cuts.is_empty());
    for cut in cuts {
        let f = temp_with(&log[..cut]);
        let (code, stdout, stderr) = run(&[
            "diagnose".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            f.path().as_os_str(),
        ]);
        assert!(code == 0 || code == 1, "cut at {cut}: {stderr}");
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let cut_findings = findings(&doc);
        let undecodable = of_rule(&cut_findings, "undecodable-record");
        assert_eq!(undecodable.len(), 1, "cut at {cut}: {stdout}");
        let at = undecodable[0]["span"]["offset"].as_u64().unwrap() as usize;
        assert!(at < cut, "cut at {cut}: finding at {at}");
    }
}

#[test]
fn a_capture_cut_inside_a_multibyte_character_is_a_truncated_stream() {
    let f = temp_with(b"data: {\"choices\":[{\"delta\":{\"content\":\"caf\xc3");
    let (code, stdout, stderr) = run(&[
        "diagnose".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        f.path().as_os_str(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        rules_of(&stdout).contains(&"stream-truncated".to_owned()),
        "{stdout}"
    );
}

/// Diagnoses `bytes` and returns the exit code and the document; fails on an error exit.
fn diagnose_bytes(bytes: &[u8]) -> (i32, serde_json::Value) {
    let f = temp_with(bytes);
    let (code, stdout, stderr) = run(&[
        "diagnose".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        f.path().as_os_str(),
    ]);
    assert!(code == 0 || code == 1, "{stderr}");
    (code, serde_json::from_str(&stdout).unwrap())
}

/// `text` with `from` replaced by `to` (which must hold a multi-byte character), and the offset
/// of the first byte after the first multi-byte character's lead byte.
fn with_multibyte(text: &str, from: &str, to: &str) -> (Vec<u8>, usize) {
    assert!(text.contains(from));
    let bytes = text.replacen(from, to, 1).into_bytes();
    let lead = bytes.iter().position(|&b| b >= 0xC0).unwrap();
    (bytes, lead + 1)
}

#[test]
fn an_sql_dump_cut_inside_a_multibyte_character_is_diagnosed_up_to_the_cut() {
    let dump =
        std::fs::read_to_string(repo("tests/fixtures/rules/session-hidden.clean.sql")).unwrap();
    let (bytes, cut) = with_multibyte(&dump, "split the parser", "split the “parser”");
    let (_, whole) = diagnose_bytes(&bytes);
    assert!(of_rule(&findings(&whole), "undecodable-record").is_empty());
    let (_, doc) = diagnose_bytes(&bytes[..cut]);
    let all = findings(&doc);
    let undecodable = of_rule(&all, "undecodable-record");
    assert_eq!(undecodable.len(), 1, "{doc}");
    // The finding is at the statement the dump ends inside.
    let at = undecodable[0]["span"]["offset"].as_u64().unwrap() as usize;
    assert!(bytes[at..cut].starts_with(b"INSERT INTO part"), "{doc}");
    // The statements before it were read: the session of the cut part was diagnosed.
    assert!(doc.to_string().contains("ses_listed"), "{doc}");
}

#[test]
fn an_export_cut_inside_a_multibyte_character_is_diagnosed_up_to_the_cut() {
    let export =
        std::fs::read_to_string(repo("tests/fixtures/checks/export-healthy.json")).unwrap();
    let (bytes, cut) = with_multibyte(&export, "Reading the test.", "Reading the “test”.");
    let (whole_code, whole) = diagnose_bytes(&bytes);
    assert_eq!(whole_code, 0, "{whole}");
    let (code, doc) = diagnose_bytes(&bytes[..cut]);
    assert_eq!(code, 1, "{doc}");
    let all = findings(&doc);
    let undecodable = of_rule(&all, "undecodable-record");
    assert_eq!(undecodable.len(), 1, "{doc}");
    // The finding is at the part the export ends inside, and the parts before it were read.
    let at = undecodable[0]["span"]["offset"].as_u64().unwrap() as usize;
    assert_eq!(bytes[at], b'{', "{doc}");
    assert!(String::from_utf8_lossy(&bytes[at..cut]).contains("\"type\": \"text\""));
    assert!(
        all.len() > 1,
        "the session before the cut is diagnosed: {doc}"
    );
}

/// The exit status, the rules found (sorted; none when the run failed) and standard error of
/// `diagnose --format json` on `bytes`, written to a file named `name`.
fn findings_of(name: &str, bytes: &[u8], extra: &[&str]) -> (i32, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["diagnose".as_ref(), "--format".as_ref(), "json".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.push(path.as_os_str());
    let (code, stdout, stderr) = run(&args);
    let mut rules = if code == 2 {
        Vec::new()
    } else {
        rules_of(&stdout)
    };
    rules.sort();
    (code, rules, stderr)
}

/// adversarial #11: line-based inputs read LF and CRLF line ends alike; an input whose lines end
/// in CR alone is read the same where its format allows it (SSE and JSON-lines captures) and
/// refused with one clear line where it is not (agent logs, transcripts), never diagnosed as if
/// it held nothing, nor planned for repair as one torn line.
#[test]
fn lines_ending_in_cr_are_read_or_refused_never_passed_over() {
    let inputs = [
        ("log", "samples/zod-failed-status.log", true),
        ("log", "samples/sse-concatenated.log", true),
        ("log", "samples/clean-session.log", true),
        (
            "jsonl",
            "tests/fixtures/transcripts/claude-orphan-tool.jsonl",
            true,
        ),
        (
            "jsonl",
            "tests/fixtures/transcripts/codex-orphan-call.jsonl",
            true,
        ),
        ("sse", "samples/sse-concatenated-chunk.sse", false),
    ];
    for (ext, rel, refused) in inputs {
        let lf = std::fs::read(repo(rel)).unwrap();
        let name = format!("input.{ext}");
        let (code, rules, stderr) = findings_of(&name, &lf, &[]);
        assert_ne!(code, 2, "{rel}: {stderr}");
        let crlf: Vec<u8> = String::from_utf8(lf.clone())
            .unwrap()
            .replace('\n', "\r\n")
            .into_bytes();
        assert_eq!(
            findings_of(&name, &crlf, &[]),
            (code, rules.clone(), String::new()),
            "{rel} with CRLF"
        );
        let cr: Vec<u8> = lf
            .iter()
            .map(|&b| if b == b'\n' { b'\r' } else { b })
            .collect();
        let (cr_code, cr_rules, cr_err) = findings_of(&name, &cr, &[]);
        if refused {
            assert_eq!(cr_code, 2, "{rel} with CR: {cr_rules:?} {cr_err}");
            assert_eq!(cr_err.lines().count(), 1, "{cr_err}");
            assert!(cr_err.contains("carriage return"), "{rel}: {cr_err}");
        } else {
            assert_eq!((cr_code, cr_rules), (code, rules), "{rel} with CR");
        }
    }
    // Told what it is, or on standard input, an agent log with CR line ends is refused too.
    let cr: Vec<u8> = std::fs::read(repo("samples/zod-failed-status.log"))
        .unwrap()
        .iter()
        .map(|&b| if b == b'\n' { b'\r' } else { b })
        .collect();
    let (code, _, stderr) = findings_of("x.log", &cr, &["--input", "agent-log"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = run_with_stdin(&["diagnose", "-"], &cr);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("carriage return"), "{stderr}");
    // A repair does not take a transcript with CR line ends for one torn line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let lf = std::fs::read(repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl")).unwrap();
    let cr: Vec<u8> = lf
        .iter()
        .map(|&b| if b == b'\n' { b'\r' } else { b })
        .collect();
    std::fs::write(&path, &cr).unwrap();
    for extra in [&["--dry-run"][..], &["--force"][..]] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["repair".as_ref()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.push(path.as_os_str());
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 2, "{extra:?}: {stdout} {stderr}");
        assert!(stderr.contains("carriage return"), "{stderr}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        cr,
        "the transcript is unchanged"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing was written"
    );
}

// 4. Error messages quote at most a few hundred bytes of the input.

/// The error line of a run that must fail with status 2.
fn error_line(args: &[&std::ffi::OsStr]) -> String {
    let (code, _, stderr) = run(args);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.trim_end().len() <= 1000,
        "{} bytes: {stderr}",
        stderr.len()
    );
    stderr
}

#[test]
fn an_sql_dump_error_quotes_the_statement_around_the_error_only() {
    let mut dump = String::from(
        "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE `message` (id text primary key, data text);\n",
    );
    dump.push_str(&format!(
        "INSERT INTO message VALUES('a','{}' 'oops');\nCOMMIT;\n",
        "x".repeat(200_000)
    ));
    let f = temp_with(dump.as_bytes());
    let line = error_line(&["diagnose".as_ref(), f.path().as_os_str()]);
    assert!(line.contains("syntax error"), "{line}");
    assert!(line.contains("'oops'"), "{line}");
    assert!(line.contains("at byte"), "{line}");
    assert!(line.contains('…'), "{line}");
}

#[test]
fn long_input_in_other_errors_is_cut() {
    // A long bare token in an HTTP recording.
    let doc = format!(
        "{{\"version\": 1, \"metadata\": {{}}, \"interactions\": [{}]}}",
        "t".repeat(100_000)
    );
    let f = temp_with(doc.as_bytes());
    let (code, _, stderr) = run(&["diagnose".as_ref(), f.path().as_os_str()]);
    assert!(stderr.len() < 1200, "{code}: {} bytes", stderr.len());
    // A long unknown rule and session id on the command line.
    let long = "r".repeat(5000);
    let line = error_line(&[
        "diagnose".as_ref(),
        "--select".as_ref(),
        long.as_ref(),
        repo("samples/clean-session.log").as_os_str(),
    ]);
    assert!(line.contains("unknown rule"), "{line}");
    let db = tempfile::tempdir().unwrap();
    let path = db.path().join("opencode.db");
    common::opencode::build_db(&path, &common::opencode::sessions());
    let line = error_line(&[
        "diagnose".as_ref(),
        "--session".as_ref(),
        long.as_ref(),
        path.as_os_str(),
    ]);
    assert!(line.contains("has no session"), "{line}");
    // serde quotes strings of the input in its messages: a baseline that is one long string.
    let baseline = temp_with(format!("\"{}\"", "b".repeat(50_000)).as_bytes());
    let line = error_line(&[
        "check".as_ref(),
        "--no-config".as_ref(),
        "--baseline".as_ref(),
        baseline.path().as_os_str(),
        repo("samples/clean-session.log").as_os_str(),
    ]);
    assert!(line.contains("not a rewind baseline"), "{line}");
    assert!(line.len() < 500, "{line}");
}

/// adversarial #13: every line rewind writes on standard error for bad input fits in 1,000
/// bytes, whatever the input quotes (long tokens, control characters that escaping lengthens)
/// and however long a list the error names (those go on lines of their own).
#[test]
fn every_error_line_fits_the_cap() {
    let mut failures = Vec::new();
    let mut check = |what: &str, args: &[&std::ffi::OsStr]| -> String {
        let (code, _, stderr) = run(args);
        if code != 2 {
            failures.push(format!("{what}: exit {code}: {stderr}"));
        }
        for line in stderr.lines() {
            if line.len() > 1000 {
                failures.push(format!("{what}: a line of {} bytes: {line}", line.len()));
            }
        }
        stderr
    };
    // An SQL dump whose syntax error SQLite reports near a long token.
    let dump = format!(
        "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE `message` (id text primary key, data text);\nINSERT INTO message VALUES('a' '{}');\nCOMMIT;\n",
        "y".repeat(900)
    );
    let f = temp_with(dump.as_bytes());
    check("sql dump", &["diagnose".as_ref(), f.path().as_os_str()]);
    // Control characters, which the printer escapes (one byte becomes six), in a quoted input.
    let db = tempfile::tempdir().unwrap();
    let path = db.path().join("opencode.db");
    common::opencode::build_db(&path, &common::opencode::sessions());
    let controls = "\u{1}".repeat(5000);
    check(
        "session id of control characters",
        &[
            "diagnose".as_ref(),
            "--session".as_ref(),
            controls.as_ref(),
            path.as_os_str(),
        ],
    );
    check(
        "rule of control characters",
        &[
            "diagnose".as_ref(),
            "--select".as_ref(),
            controls.as_ref(),
            repo("samples/clean-session.log").as_os_str(),
        ],
    );
    let f = temp_with(controls.as_bytes());
    check(
        "unknown input",
        &["diagnose".as_ref(), f.path().as_os_str()],
    );
    check(
        "a missing file with a long name",
        &[
            "diagnose".as_ref(),
            db.path().join("\u{7f}".repeat(3000)).as_os_str(),
        ],
    );
    // The live-session refusal names every session it refuses, each on a line of its own.
    let long = |id: &str| format!("{id}_{}", "x".repeat(200));
    let mut batch = String::from("PRAGMA foreign_keys=OFF;\n");
    for id in ["ses_pr16751", "ses_crash", "ses_empty", "ses_dup"] {
        let new = long(id);
        for (table, column) in [
            ("session", "id"),
            ("message", "session_id"),
            ("part", "session_id"),
            ("event", "aggregate_id"),
            ("event_sequence", "aggregate_id"),
        ] {
            batch += &format!("UPDATE {table} SET {column} = '{new}' WHERE {column} = '{id}';\n");
        }
    }
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    batch += &format!(
        "UPDATE message SET data = json_remove(data, '$.time.completed', '$.finish');\nUPDATE part SET time_updated = {};\n",
        now - 3_000
    );
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&batch)
        .unwrap();
    let stderr = check("live sessions", &["repair".as_ref(), path.as_os_str()]);
    assert!(stderr.contains("OpenCode may be writing"), "{stderr}");
    for id in ["ses_pr16751", "ses_crash", "ses_empty", "ses_dup"] {
        if !stderr.contains(&long(id)) {
            failures.push(format!("{id} is not named whole: {stderr}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// 5. Repairs that fail or are killed leave no damaged backup.

fn repair_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = common::opencode::build_db(
        &dir.path().join("opencode.db"),
        &common::opencode::sessions(),
    );
    (dir, db)
}

/// (complete backups, partial ones) next to the database.
fn backup_files(dir: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".rewind-backup-"))
        .collect();
    names.into_iter().partition(|n| !n.contains(".partial"))
}

fn table_rows(db: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    conn.query_row(
        "SELECT (SELECT count(*) FROM part) + (SELECT count(*) FROM message)",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn a_repair_killed_during_the_backup_leaves_no_backup_under_its_final_name() {
    let (dir, db) = repair_fixture();
    let rows = table_rows(&db);
    let out = rewind()
        .env("REWIND_TEST_ABORT_AT", "during-backup")
        .arg("repair")
        .arg(&db)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let (complete, _partial) = backup_files(dir.path());
    assert!(complete.is_empty(), "{complete:?}");
    assert_eq!(table_rows(&db), rows, "the database is unchanged");
    // The next repair removes the partial file and leaves one whole backup.
    let out = rewind().arg("repair").arg(&db).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (complete, partial) = backup_files(dir.path());
    assert_eq!(complete.len(), 1, "{complete:?}");
    assert!(partial.is_empty(), "{partial:?}");
    assert_eq!(
        table_rows(&dir.path().join(&complete[0])),
        rows,
        "the backup is whole"
    );
}

#[test]
fn a_backup_that_cannot_be_written_is_removed_and_the_database_is_unchanged() {
    let (dir, db) = repair_fixture();
    let rows = table_rows(&db);
    let size = std::fs::metadata(&db).unwrap().len();
    // A file size limit below the database's size: writing the backup fails with EFBIG, as on
    // a full disk (SIGXFSZ is ignored, so the write returns an error instead of killing).
    let script = format!(
        "trap '' XFSZ; ulimit -f {}; exec {} repair {}",
        (size / 1024 / 2).max(1),
        assert_cmd::cargo::cargo_bin("rewind").display(),
        db.display()
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("backup"), "{stderr}");
    assert!(stderr.contains("the database was not changed"), "{stderr}");
    assert!(stderr.contains("no backup was left behind"), "{stderr}");
    let (complete, partial) = backup_files(dir.path());
    assert!(
        complete.is_empty() && partial.is_empty(),
        "{complete:?} {partial:?}"
    );
    assert_eq!(table_rows(&db), rows);
}

#[test]
fn a_read_only_database_is_refused_without_a_backup() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, db) = repair_fixture();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    if std::fs::OpenOptions::new().write(true).open(&db).is_ok() {
        // Running as root: permissions do not stop writes, so there is nothing to test.
        return;
    }
    let out = rewind().arg("repair").arg(&db).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("read-only"), "{stderr}");
    assert!(stderr.contains("not changed"), "{stderr}");
    let (complete, partial) = backup_files(dir.path());
    assert!(complete.is_empty() && partial.is_empty());
}

#[test]
fn an_interrupted_diagnosis_removes_its_private_database_copy() {
    let (dir, db) = repair_fixture();
    // A `-wal` without `-shm` makes rewind work on a private copy.
    std::fs::write(dir.path().join("opencode.db-wal"), b"").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("rewind"))
        .env("TMPDIR", tmp.path())
        .env("REWIND_TEST_PAUSE_AFTER_SNAPSHOT", "1")
        .arg("diagnose")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the copy, then interrupt.
    let start = Instant::now();
    let copies = || std::fs::read_dir(tmp.path()).unwrap().count();
    while copies() == 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(copies() > 0, "no private copy was made");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_eq!(copies(), 0, "the private copy was left behind");
}

/// adversarial #8: a signal while rewind reads standard input removes the private copy and ends
/// the run quietly, with the shell's status for that signal (128 + its number), even when the
/// reading goes on meanwhile and finds its copy gone (standard input is closed right after the
/// signal here, so that the run races the handler to the end).
#[test]
#[cfg(unix)]
fn a_signal_while_reading_standard_input_exits_quietly_with_its_status() {
    for (signal, status) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        for round in 0..3 {
            let tmp = tempfile::tempdir().unwrap();
            let mut child = Command::new(assert_cmd::cargo::cargo_bin("rewind"))
                .env("TMPDIR", tmp.path())
                .args(["diagnose", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            stdin
                .write_all(b"{\"type\":\"log\",\"level\":\"info\",\"message\":\"hi\"}\n")
                .unwrap();
            let start = Instant::now();
            let copies = || std::fs::read_dir(tmp.path()).unwrap().count();
            while copies() == 0 && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(copies() > 0, "no private copy was made");
            let sent = Command::new("kill")
                .args([&format!("-{signal}"), &child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
            drop(stdin);
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(status),
                "SIG{signal} (round {round}): {stderr}"
            );
            assert!(stderr.is_empty(), "SIG{signal} (round {round}): {stderr}");
            assert_eq!(copies(), 0, "SIG{signal}: the private copy was left behind");
        }
    }
}

#[test]
fn copies_left_by_killed_runs_are_swept() {
    let tmp = tempfile::tempdir().unwrap();
    // A process id that cannot be running, and a modification time two hours ago.
    let stale = tmp.path().join("rewind-private-4294967295-1-0-db");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("opencode.db"), b"x").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::open(&stale)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    let young = tmp.path().join("rewind-private-4294967294-1-0-input");
    std::fs::write(&young, b"x").unwrap();
    let other = tmp.path().join("not-rewind-4294967295");
    std::fs::write(&other, b"x").unwrap();
    other_file_old(&other, two_hours_ago);
    // A run that makes no private copy leaves the folder alone (it does not even list it).
    let out = rewind()
        .env("TMPDIR", tmp.path())
        .arg("rules")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stale.exists(),
        "only a run that makes a private copy sweeps"
    );
    // Standard input is copied to a private file: that run sweeps.
    let out = rewind()
        .env("TMPDIR", tmp.path())
        .args(["diagnose", "-"])
        .write_stdin("{\"type\":\"log\",\"level\":\"info\",\"message\":\"hi\"}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!stale.exists(), "a stale copy is removed");
    assert!(young.exists(), "a young one is kept");
    assert!(other.exists(), "files rewind did not make are kept");
}

/// adversarial #9: a run killed outright (SIGKILL: no handler runs) leaves its private copy of
/// standard input behind; the next run that makes a private copy removes it, however recently
/// the killed run made it and whatever process now has its process id, while a copy a running
/// rewind holds is kept.
#[test]
#[cfg(unix)]
fn a_copy_a_killed_run_left_is_removed_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let copies = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    // A run reading standard input that never ends: its copy is made and held.
    let spawn_reader = || {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("rewind"))
            .env("TMPDIR", tmp.path())
            .args(["diagnose", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(b"{\"type\":\"log\",\"level\":\"info\",\"message\":\"hi\"}\n")
            .unwrap();
        child
    };
    let wait_for = |n: usize| {
        let start = Instant::now();
        while copies().len() < n && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(copies().len(), n, "{:?}", copies());
    };
    let mut killed = spawn_reader();
    wait_for(1);
    let left = copies().remove(0);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(left.exists(), "SIGKILL runs no clean-up");
    // A minute later (as the file says), the next run that makes a copy removes it.
    other_file_old(
        &left,
        std::time::SystemTime::now() - Duration::from_secs(60),
    );
    let mut running = spawn_reader();
    let start = Instant::now();
    while (left.exists() || copies().is_empty()) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!left.exists(), "the killed run's copy is removed");
    let held = copies();
    assert_eq!(held.len(), 1, "{held:?}");
    // A copy a running rewind holds is kept, however old it looks.
    other_file_old(
        &held[0],
        std::time::SystemTime::now() - Duration::from_secs(7200),
    );
    let out = rewind()
        .env("TMPDIR", tmp.path())
        .args(["diagnose", "-"])
        .write_stdin("{\"type\":\"log\",\"level\":\"info\",\"message\":\"hi\"}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(held[0].exists(), "a running rewind's copy is kept");
    drop(running.stdin.take());
    assert_eq!(running.wait().unwrap().code(), Some(0));
    assert!(copies().is_empty(), "{:?}", copies());
}

fn other_file_old(p: &std::path::Path, t: std::time::SystemTime) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

// 6. CLI expectations.

#[test]
fn completions_and_man_pages_are_generated_from_the_command_line() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, stdout, stderr) = run(&["completions".as_ref(), shell.as_ref()]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        for word in ["diagnose", "check", "replay", "fail-on"] {
            assert!(stdout.contains(word), "{shell} completes {word}");
        }
    }
    let (code, stdout, _) = run(&["man".as_ref()]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with(".ie") || stdout.contains(".TH rewind 1"),
        "{stdout}"
    );
    for word in ["diagnose", "check", "repair", "completions"] {
        assert!(stdout.contains(word), "man page lists {word}");
    }
    let (code, stdout, _) = run(&["man".as_ref(), "diagnose".as_ref()]);
    assert_eq!(code, 0);
    assert!(stdout.contains(".TH rewind-diagnose 1"), "{stdout}");
    assert!(stdout.contains("select"), "{stdout}");
    let (code, _, stderr) = run(&["man".as_ref(), "nope".as_ref()]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn the_rule_catalogue_fits_80_columns_in_a_pipe() {
    // Without `COLUMNS`, a pipe gets 80 columns.
    let out = rewind()
        .env_remove("COLUMNS")
        .arg("rules")
        .output()
        .unwrap();
    let (code, stdout) = (out.status.code(), String::from_utf8_lossy(&out.stdout));
    assert_eq!(code, Some(0));
    for line in stdout.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} chars: {line}",
            line.chars().count()
        );
    }
    assert!(stdout.contains("tool-error-dropped"));
}

#[test]
fn sarif_names_no_information_address() {
    let (code, stdout, _) = run(&[
        "check".as_ref(),
        "--no-config".as_ref(),
        "--format".as_ref(),
        "sarif".as_ref(),
        repo("samples/zod-failed-status.log").as_os_str(),
    ]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        doc["runs"][0]["tool"]["driver"]
            .get("informationUri")
            .is_none()
    );
    let _: serde_sarif::sarif::Sarif = serde_json::from_str(&stdout).unwrap();
}

#[test]
fn repair_says_it_cannot_repair_a_capture_or_a_log() {
    for sample in [
        "samples/sse-concatenated-chunk.sse",
        "samples/zod-failed-status.log",
    ] {
        let (code, _, stderr) = run(&["repair".as_ref(), repo(sample).as_os_str()]);
        assert_eq!(code, 2);
        assert!(
            stderr.contains("cannot repair that kind of input"),
            "{stderr}"
        );
        assert!(!stderr.contains("cannot read"), "{stderr}");
    }
}

#[test]
fn no_progress_is_printed_when_standard_error_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let capture = std::fs::read(repo("samples/sse-concatenated-chunk.sse")).unwrap();
    for i in 0..30 {
        std::fs::write(dir.path().join(format!("c{i}.sse")), &capture).unwrap();
    }
    let (code, _, stderr) = run(&[
        "check".as_ref(),
        "--no-config".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(code, 1);
    assert!(stderr.is_empty(), "{stderr}");
}

/// A payload with an issue per item of a long array: the human output shows a bounded number of
/// its places and counts the rest (each label under one line repeats the line, so thousands used
/// to print their square: 97 MB for 16 KB of log); the JSON output keeps every one.
#[test]
fn thousands_of_places_on_one_line_print_a_bounded_report() {
    let zeros = vec!["0"; 3000].join(",");
    let log = format!(
        r#"{{"type":"text","sessionID":"ses_1","part":{{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"patch","hash":"h","files":[{zeros}]}}}}"#
    );
    let f = temp_with(format!("{log}\n").as_bytes());
    let (code, out, _) = run(&["diagnose".as_ref(), f.path().as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.len() < 20_000, "{} bytes", out.len());
    assert!(out.contains("and 2983 more related places"), "{out}");
    let (_, json, _) = run(&[
        "diagnose".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        f.path().as_os_str(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let related = v["findings"][0]["related"].as_array().map(Vec::len);
    assert_eq!(related, Some(2999), "{json}");
}
