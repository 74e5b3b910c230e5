//! `rewind redact`: secrets planted in every fixture and corpus input (in JSON strings, inside
//! JSON carried in strings, behind `\u` escapes, in HTTP headers) are gone from the redacted
//! copy, and `rewind diagnose` finds the same (rule, file, line, session) on the copy as on the
//! input with the secrets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{corpus, repo, rewind};

/// Every planted secret carries this mark (and no placeholder does).
const MARK: &str = "PLANTED";

/// The secrets planted, one kind after another, as they are written inside a JSON string.
const SECRETS: &[&str] = &[
    "sk-ant-api03-PLANTEDaaaaaaaaaaaaaaaaaaaa",
    "sk-proj-PLANTEDbbbbbbbbbbbbbbbbbbbbbb",
    "AIzaPLANTEDcccccccccccccccccccccccccccc",
    "ghp_PLANTEDdddddddddddddddddddddddddddddd",
    "github_pat_PLANTED_dddddddddddddddddddddd",
    "glpat-PLANTEDeeeeeeeeeeeeee",
    "xoxb-PLANTED-ffffffffff",
    "AKIAPLANTEDGGGG12345",
    "AKIAPLANTEDGGGG12345 PLANTEDwJalrXUtnFEMIK7MDENGbPxRfiCYEXAMP",
    "run --password=PLANTEDpw123 now",
    "eyJPLANTEDhhhhhhhh.eyJPLANTEDiiiiiiii.PLANTEDjjjjjjjj",
    "Authorization: Bearer PLANTEDkkkkkkkkkkkk",
    "https://user:PLANTEDpass@host.example.com/x",
    "mail PLANTED.person@example.org",
    // An escape must not hide a secret.
    "\\u0073k-ant-api03-PLANTEDescapedzzzzzzzzzz",
    "-----BEGIN PRIVATE KEY-----\\nPLANTEDpem\\n-----END PRIVATE KEY-----",
];

/// Members whose values the redaction keeps (ids, times, types): nothing is planted there.
use rewind::redaction::is_kept_key as kept_key;

/// `text` with secrets planted: in string values that read like prose (a space in them), in
/// `\"text\":\"` strings inside strings, and headers added to `"headers"` objects and lists.
fn plant(text: &[u8], n: &mut usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1024);
    let next = |n: &mut usize| {
        let s = SECRETS[*n % SECRETS.len()];
        *n += 1;
        s
    };
    let mut i = 0;
    let mut last_key: Option<String> = None;
    let mut planted = 0usize;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with(br#"\"text\":\""#) {
            out.extend_from_slice(br#"\"text\":\""#);
            out.extend_from_slice(next(n).replace('\\', "\\\\").as_bytes());
            out.extend_from_slice(b" ");
            i += 11;
            continue;
        }
        if text[i] != b'"' {
            out.push(text[i]);
            i += 1;
            continue;
        }
        // A string literal on this line.
        let mut j = i + 1;
        let mut closed = false;
        while j < text.len() {
            match text[j] {
                b'\\' => j += 2,
                b'"' => {
                    closed = true;
                    break;
                }
                b'\n' => break,
                _ => j += 1,
            }
        }
        if !closed || j >= text.len() {
            out.extend_from_slice(&text[i..j.min(text.len())]);
            i = j.min(text.len());
            continue;
        }
        let literal = &text[i..=j];
        let after = text[j + 1..]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .copied();
        let before = out.iter().rev().find(|b| !b.is_ascii_whitespace()).copied();
        let body = String::from_utf8_lossy(&literal[1..literal.len() - 1]).into_owned();
        if after == Some(b':') {
            last_key = Some(body.clone());
            out.extend_from_slice(literal);
            // Headers: one more, with a secret, in front of the first.
            if body == "headers" {
                let k = j + 1 + text[j + 1..].iter().position(|b| *b == b':').unwrap_or(0);
                let open = text[k + 1..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .map(|p| k + 1 + p);
                let first = open.and_then(|o| {
                    text[o + 1..]
                        .iter()
                        .find(|b| !b.is_ascii_whitespace())
                        .copied()
                });
                match (open.map(|o| text[o]), first) {
                    (Some(b'{'), Some(b'"')) => {
                        let o = open.unwrap();
                        out.extend_from_slice(&text[j + 1..=o]);
                        out.extend_from_slice(
                            br#""authorization": "Bearer PLANTEDhdrauth", "x-api-key": "PLANTEDhdrkey", "#,
                        );
                        i = o + 1;
                        continue;
                    }
                    (Some(b'['), Some(b'{')) => {
                        let o = open.unwrap();
                        out.extend_from_slice(&text[j + 1..=o]);
                        out.extend_from_slice(
                            br#"{"name": "Cookie", "value": "sid=PLANTEDharcookie"}, "#,
                        );
                        i = o + 1;
                        continue;
                    }
                    _ => {}
                }
            }
        } else if before == Some(b':')
            && !last_key.as_deref().is_some_and(kept_key)
            && body.contains(' ')
            && !body.contains("\\\"")
            && planted < 64
        {
            planted += 1;
            out.push(b'"');
            out.extend_from_slice(next(n).as_bytes());
            out.push(b' ');
            out.extend_from_slice(&literal[1..]);
        } else {
            out.extend_from_slice(literal);
        }
        i = j + 1;
    }
    out
}

/// Whether `bytes` still hold anything planted.
fn leaks(bytes: &[u8]) -> Option<String> {
    for needle in [MARK.as_bytes(), b"planted.person", b"PLANTEDescaped"] {
        if let Some(k) = memchr::memmem::find(bytes, needle) {
            let from = k.saturating_sub(80);
            let to = (k + 80).min(bytes.len());
            return Some(String::from_utf8_lossy(&bytes[from..to]).into_owned());
        }
    }
    None
}

/// What must be the same: (rule, file below the input, line, end line, session) of each
/// finding, and the exit status. Byte offsets and columns move with placeholders of another
/// length, so they are not compared.
fn diagnosis(input: &Path) -> (i32, BTreeSet<String>) {
    let out = rewind()
        .args(["diagnose", "--format", "json"])
        .arg(input)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
        return (code, BTreeSet::new());
    };
    let root = input.to_string_lossy().into_owned();
    let set = doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let file = f["file"].as_str().unwrap_or("");
            let file = file.strip_prefix(&root).unwrap_or("");
            format!(
                "{} {file} {}-{} {}",
                f["rule"].as_str().unwrap_or(""),
                f["line"],
                f["end_line"],
                f["session_id"]
            )
        })
        .collect();
    (code, set)
}

/// Copies `from` (a file or a folder) to `to` with secrets planted in every file.
fn plant_copy(from: &Path, to: &Path, n: &mut usize) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        let mut entries: Vec<_> = std::fs::read_dir(from).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            plant_copy(&e.path(), &to.join(e.file_name()), n);
        }
    } else {
        let bytes = std::fs::read(from).unwrap();
        if bytes.starts_with(b"SQLite format 3\0") {
            // Bytes replaced in a database would ruin it: databases get their secrets from
            // their SQL dumps (`check_database`).
            std::fs::write(to, bytes).unwrap();
        } else {
            std::fs::write(to, plant(&bytes, n)).unwrap();
        }
    }
}

fn all_bytes(path: &Path) -> Vec<u8> {
    if path.is_dir() {
        let mut out = Vec::new();
        for e in std::fs::read_dir(path).unwrap().flatten() {
            out.extend(all_bytes(&e.path()));
        }
        out
    } else {
        std::fs::read(path).unwrap()
    }
}

/// Plants, redacts, checks: how many secrets were planted; `Err` says what went wrong; `Ok(None)`
/// when redact refused the input (it is not one rewind reads).
fn check_one(input: &Path, work: &Path) -> Result<Option<usize>, String> {
    let name = input.file_name().unwrap();
    let planted_dir = work.join("planted");
    let red_dir = work.join("redacted");
    std::fs::create_dir_all(&planted_dir).unwrap();
    std::fs::create_dir_all(&red_dir).unwrap();
    let planted = planted_dir.join(name);
    let redacted = red_dir.join(name);
    let mut n = 0;
    plant_copy(input, &planted, &mut n);
    let out = rewind()
        .arg("redact")
        .arg(&planted)
        .arg("-o")
        .arg(&redacted)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if let Some(leak) = leaks(&out.stdout).or_else(|| leaks(&out.stderr)) {
        return Err(format!("a secret in redact's own output: {leak}"));
    }
    if !out.status.success() {
        // Not an input rewind reads (no format claims it, empty, binary): refused, one line.
        if out.status.code() == Some(2)
            && stderr.lines().count() == 1
            && [
                "cannot tell what",
                "is empty",
                "is not text",
                "is an AWS event-stream",
            ]
            .iter()
            .any(|w| stderr.contains(w))
        {
            return Ok(None);
        }
        return Err(format!("redact failed: {stderr}"));
    }
    if let Some(leak) = leaks(&all_bytes(&redacted)) {
        return Err(format!("a planted secret left in the copy: …{leak}…"));
    }
    let (a_code, a) = diagnosis(&planted);
    let (b_code, b) = diagnosis(&redacted);
    if a_code != b_code || a != b {
        return Err(format!(
            "diagnosis differs (exit {a_code} vs {b_code}):\n  only with secrets: {:?}\n  only redacted: {:?}",
            a.difference(&b).collect::<Vec<_>>(),
            b.difference(&a).collect::<Vec<_>>()
        ));
    }
    // An SQL dump is also loaded into a database, which is redacted as a database.
    if input.extension().is_some_and(|e| e == "sql") {
        check_database(&planted, work)?;
    }
    Ok(Some(n))
}

/// The database an SQL dump (with secrets planted) loads into: redacted, no planted byte left in
/// the file, the same diagnosis.
fn check_database(dump: &Path, work: &Path) -> Result<(), String> {
    let sql = std::fs::read_to_string(dump).map_err(|e| e.to_string())?;
    let db = work.join("planted.db");
    {
        let conn = rusqlite::Connection::open(&db).map_err(|e| e.to_string())?;
        if conn.execute_batch(&sql).is_err() {
            // A dump made to be damaged: its database is not what this checks.
            return Ok(());
        }
    }
    let out = work.join("redacted.db");
    let run = rewind()
        .arg("redact")
        .arg(&db)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    if !run.status.success() {
        let err = String::from_utf8_lossy(&run.stderr);
        if err.contains("not an OpenCode database") || err.contains("cannot tell what") {
            return Ok(());
        }
        return Err(format!("redact failed on the database: {err}"));
    }
    if let Some(leak) = leaks(&std::fs::read(&out).unwrap()) {
        return Err(format!("a planted secret left in the database: …{leak}…"));
    }
    let (a_code, a) = diagnosis(&db);
    let (b_code, b) = diagnosis(&out);
    if a_code != b_code || a != b {
        return Err(format!(
            "the database's diagnosis differs (exit {a_code} vs {b_code}):\n  only with secrets: {:?}\n  only redacted: {:?}",
            a.difference(&b).collect::<Vec<_>>(),
            b.difference(&a).collect::<Vec<_>>()
        ));
    }
    Ok(())
}

/// The inputs below `root`: files, and OpenCode storage folders and Codex homes (the homes the
/// tests build from `layout` files, with their databases) as a whole.
fn inputs(root: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(root).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            let codex_home = p.join("layout").is_file() && p.join("state_5.sqlite").exists();
            if (p.join("session").is_dir() && p.join("message").is_dir()) || codex_home {
                out.push(p);
            } else {
                inputs(&p, out);
            }
        } else if !matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("md" | "toml" | "snap" | "py" | "sh")
        ) {
            out.push(p);
        }
    }
}

fn sweep(inputs: &[PathBuf]) -> (usize, usize, usize, Vec<String>) {
    let work = tempfile::Builder::new()
        .prefix("wt-redact-sweep")
        .tempdir()
        .unwrap();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new((0usize, 0usize, 0usize, Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(input) = inputs.get(k) else { break };
                    let dir = work.path().join(k.to_string());
                    let r = check_one(input, &dir);
                    let _ = std::fs::remove_dir_all(&dir);
                    let mut g = results.lock().unwrap();
                    match r {
                        Ok(Some(n)) => {
                            g.0 += 1;
                            g.2 += n;
                        }
                        Ok(None) => g.1 += 1,
                        Err(e) => g.3.push(format!("{}: {e}", input.display())),
                    }
                }
            });
        }
    });
    results.into_inner().unwrap()
}

#[test]
fn planted_secrets_are_gone_and_the_diagnosis_stays_on_every_fixture() {
    // The Codex homes the fixtures describe, built whatever ran before.
    common::codex_home::build_fixture_homes();
    let mut all = Vec::new();
    inputs(&repo("samples"), &mut all);
    inputs(&repo("tests/fixtures"), &mut all);
    let (done, refused, planted, failures) = sweep(&all);
    println!(
        "fixtures: {planted} secrets planted in {done} inputs, redacted and compared; {refused} refused (not an input rewind reads)"
    );
    assert!(done > 400, "only {done} fixtures were redacted");
    assert!(planted > 2000, "only {planted} secrets were planted");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn planted_secrets_are_gone_and_the_diagnosis_stays_on_the_corpus() {
    let root = corpus();
    if !root.is_dir() {
        println!(
            "skipped: no corpus at {} (set REWIND_CORPUS)",
            root.display()
        );
        return;
    }
    let mut all = Vec::new();
    inputs(&root, &mut all);
    let (done, refused, planted, failures) = sweep(&all);
    println!(
        "corpus: {planted} secrets planted in {done} inputs, redacted and compared; {refused} refused (not an input rewind reads)"
    );
    assert!(done > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A database's copy: planted secrets gone from every byte of the file (no journal or WAL left
/// beside it), the diagnosis the same, the original untouched.
#[test]
fn a_database_is_copied_redacted_and_vacuumed() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::opencode::build_db(
        &dir.path().join("opencode.db"),
        &common::opencode::sessions(),
    );
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             UPDATE part SET data = replace(data, '\"text\":\"', '\"text\":\"sk-ant-api03-PLANTEDdbbbbbbbbbbbbbbbbbbbb \\u0062ob.PLANTED@corp.io ');
             UPDATE session SET title = title || ' ghp_PLANTEDdddddddddddddddddddddddddddddd';",
        )
        .unwrap();
        // The connection stays open: the planted rows are in the WAL, not yet in the file.
        let before = std::fs::read(&db).unwrap();
        let wal = std::fs::read(dir.path().join("opencode.db-wal")).unwrap_or_default();
        assert!(
            leaks(&wal).is_some() || leaks(&before).is_some(),
            "nothing was planted"
        );
        let original: Vec<u8> = [before.clone(), wal.clone()].concat();
        let out = dir.path().join("out/redacted.db");
        let run = rewind()
            .arg("redact")
            .arg(&db)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            stdout.contains("anthropic-key") && stdout.contains("github-token"),
            "{stdout}"
        );
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(leaks(&bytes), None, "a secret in the redacted database");
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut p = out.clone().into_os_string();
            p.push(suffix);
            assert!(!PathBuf::from(p).exists(), "{suffix} left beside the copy");
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        assert_eq!(diagnosis(&db).1, diagnosis(&out).1);
        assert!(!diagnosis(&out).1.is_empty());
        let after: Vec<u8> = [
            std::fs::read(&db).unwrap(),
            std::fs::read(dir.path().join("opencode.db-wal")).unwrap_or_default(),
        ]
        .concat();
        assert_eq!(original, after, "the original changed");
        drop(conn);
    }
}

/// A storage folder is mirrored, file by file.
#[test]
fn a_storage_folder_is_mirrored() {
    let dir = tempfile::tempdir().unwrap();
    let src = repo("tests/fixtures/matrix/opencode/1.1.65/tool/storage");
    let planted = dir.path().join("storage");
    let mut n = 0;
    plant_copy(&src, &planted, &mut n);
    assert!(leaks(&all_bytes(&planted)).is_some());
    let out = dir.path().join("copy");
    rewind()
        .arg("redact")
        .arg(&planted)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let files = |d: &Path| {
        let mut v = Vec::new();
        let mut stack = vec![d.to_path_buf()];
        while let Some(p) = stack.pop() {
            for e in std::fs::read_dir(&p).unwrap().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    v.push(e.path().strip_prefix(d).unwrap().to_path_buf());
                }
            }
        }
        v.sort();
        v
    };
    assert_eq!(files(&planted), files(&out));
    assert_eq!(leaks(&all_bytes(&out)), None);
    assert_eq!(diagnosis(&planted), diagnosis(&out));
}

fn stderr_line(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.len() <= 1000);
    err
}

#[test]
fn refusals_are_one_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("notes.txt");
    std::fs::write(
        &secret,
        "sk-ant-api03-PLANTEDzzzzzzzzzzzzzzzzzzzzzz is my key\n",
    )
    .unwrap();
    let err = stderr_line(
        rewind()
            .arg("redact")
            .arg(&secret)
            .arg("-o")
            .arg(dir.path().join("o")),
    );
    assert!(err.contains("cannot tell what"), "{err}");
    assert_eq!(leaks(err.as_bytes()), None, "the error quotes the input");
    assert!(!dir.path().join("o").exists());

    let log = repo("tests/fixtures/checks/model-substituted.log");
    let input = dir.path().join("a.log");
    std::fs::copy(&log, &input).unwrap();
    let err = stderr_line(rewind().arg("redact").arg(&input).arg("-o").arg(&input));
    assert!(err.contains("is the input"), "{err}");

    let out = dir.path().join("b.log");
    std::fs::write(&out, "keep me").unwrap();
    let err = stderr_line(rewind().arg("redact").arg(&input).arg("-o").arg(&out));
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    rewind()
        .arg("redact")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .arg("--force")
        .assert()
        .success();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&log).unwrap());
}

/// The same secret gets the same placeholder in every file of a run; `--dry-run` lists where,
/// never what, and writes nothing; `--pattern` and `--keep` are obeyed.
#[test]
fn placeholders_are_shared_across_files_and_dry_run_shows_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let line = |text: &str| {
        format!(
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}},\"uuid\":\"u1\",\"parentUuid\":null,\"sessionId\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00Z\"}}\n"
        )
    };
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    std::fs::write(
        &a,
        line("key sk-ant-api03-PLANTEDsharedaaaaaaaaaaaaa from al@corp.io, ticket ACME-PLANTED-42"),
    )
    .unwrap();
    std::fs::write(&b, line("ghp_PLANTEDdddddddddddddddddddddddddddddd then sk-ant-api03-PLANTEDsharedaaaaaaaaaaaaa, mail al@example.com")).unwrap();
    let run = rewind()
        .arg("redact")
        .args([&a, &b])
        .arg("--dry-run")
        .args(["--pattern", r"ACME-[A-Z]+-\d+", "--keep", r"@example\.com$"])
        .output()
        .unwrap();
    assert!(run.status.success());
    let listing = String::from_utf8_lossy(&run.stdout);
    assert_eq!(leaks(listing.as_bytes()), None);
    assert!(
        listing.contains("a.jsonl:1: anthropic-key → [REDACTED:anthropic-key:1]"),
        "{listing}"
    );
    assert!(
        listing.contains("b.jsonl:1: anthropic-key → [REDACTED:anthropic-key:1]"),
        "{listing}"
    );
    assert!(
        listing.contains("pattern → [REDACTED:pattern:1]"),
        "{listing}"
    );
    assert!(listing.contains("nothing written"), "{listing}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

    let out = dir.path().join("out");
    rewind()
        .arg("redact")
        .args([&a, &b])
        .arg("-o")
        .arg(&out)
        .args(["--pattern", r"ACME-[A-Z]+-\d+", "--keep", r"@example\.com$"])
        .assert()
        .success();
    let b_out = std::fs::read_to_string(out.join("b.jsonl")).unwrap();
    assert!(
        b_out.contains(
            "[REDACTED:github-token:1] then [REDACTED:anthropic-key:1], mail al@example.com"
        ),
        "{b_out}"
    );
    assert_eq!(leaks(&all_bytes(&out)), None);
}

/// `--redact` on `diagnose` and `check`: no output format quotes a secret, while without it the
/// same report does (so the test sees the secret reach every printer).
#[test]
fn reports_redact_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo("tests/fixtures/stream/provider-error.sse")).unwrap();
    let text = text.replace(
        "\"message\":\"Overloaded\"",
        "\"message\":\"Overloaded for key sk-ant-api03-PLANTEDaaaaaaaaaaaaaaaaaaaaa (bob.PLANTED@corp.io)\"",
    );
    assert!(text.contains(MARK));
    let input = dir.path().join("provider-error.sse");
    std::fs::write(&input, text).unwrap();
    for command in ["diagnose", "check"] {
        for format in [
            "human", "json", "jsonl", "sarif", "junit", "html", "github", "concise",
        ] {
            let run = |redact: bool| {
                let out = dir
                    .path()
                    .join(format!("report-{command}-{format}-{redact}"));
                let mut cmd = rewind();
                cmd.env("COLUMNS", "240")
                    .arg(command)
                    .args(["--format", format, "-o"])
                    .arg(&out)
                    .arg(&input);
                if redact {
                    cmd.arg("--redact");
                }
                let status = cmd.output().unwrap();
                assert!(
                    matches!(status.status.code(), Some(0 | 1)),
                    "{command} {format}: {}",
                    String::from_utf8_lossy(&status.stderr)
                );
                std::fs::read(&out).unwrap()
            };
            let plain = run(false);
            assert!(
                leaks(&plain).is_some(),
                "{command} --format {format} does not quote the message: the test shows nothing"
            );
            let redacted = run(true);
            assert_eq!(
                leaks(&redacted),
                None,
                "{command} --format {format} --redact"
            );
            assert!(
                memchr::memmem::find(&redacted, b"[REDACTED:anthropic-key:1]").is_some(),
                "{command} --format {format} --redact: no placeholder"
            );
        }
    }
}
