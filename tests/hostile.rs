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
