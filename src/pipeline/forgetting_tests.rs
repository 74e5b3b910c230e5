//! A diagnosis that forgets what it no longer needs of a log (`agent_log::replay_forgetting`)
//! against one that keeps the whole model: the same findings and summaries, on every agent log
//! of the project and the corpus, and on thousands of mutations of them.

use std::path::{Path, PathBuf};

use crate::formats::agent_log::replay::{Readings, replay, replay_forgetting_again};
use crate::session::Analysis;
use crate::source::FileId;
use crate::testing::xorshift;

/// Findings, session summaries and counts: what a diagnosis prints.
fn outcome(analysis: &Analysis) -> String {
    let findings = crate::checks::run(analysis, &|_| true);
    let sessions = crate::report::summarize(analysis, &findings);
    format!("{findings:#?}\n{sessions:#?}\n{:?}", analysis.counts)
}

/// The outcome of a forgetting diagnosis (reading the text again as often as it says), and
/// whether it forgot anything.
fn forgetting(text: &[u8], from: usize) -> (String, bool) {
    let (outcome, forgot, _) = forgetting_read(text, from);
    (outcome, forgot)
}

/// [`forgetting`], with how the text was read.
fn forgetting_read(text: &[u8], from: usize) -> (String, bool, Readings) {
    let rules = || -> Box<dyn crate::session::forgetting::Forgetting> {
        Box::<crate::checks::quiet::Quiet>::default()
    };
    let (a, readings) = replay_forgetting_again(|| Ok(text), FileId(0), from, rules, |e| e)
        .expect("a log in memory reads");
    let forgot = a.sessions.iter().any(|s| s.forgotten.messages > 0);
    (outcome(&a), forgot, readings)
}

fn whole(text: &[u8]) -> String {
    outcome(&replay(text, FileId(0)).expect("a log in memory reads"))
}

/// Every agent log of the project (fixtures, samples) and of the corpus, when it is there.
fn logs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = match std::env::var_os("REWIND_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => root.join("../shared/corpus"),
    };
    let mut dirs = vec![root.join("tests/fixtures"), root.join("samples")];
    dirs.push(corpus.join("agent-logs"));
    let mut out = Vec::new();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if crate::formats::recognize::detect(&p)
                .is_ok_and(crate::core::Format::is_agent_log)
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn forgetting_changes_no_finding_on_any_log() {
    let logs = logs();
    assert!(logs.len() >= 50, "only {} agent logs found", logs.len());
    let mut forgot = 0;
    for path in &logs {
        let text = std::fs::read(path).expect("a fixture reads");
        let expected = whole(&text);
        for from in [0, 1, 7] {
            let (got, did) = forgetting(&text, from);
            assert_eq!(
                got,
                expected,
                "{} (forgetting from {from} parts)",
                path.display()
            );
            forgot += usize::from(did && from == 0);
        }
    }
    // Most logs have one or two messages, with nothing to forget before the end.
    assert!(
        forgot >= 5,
        "only {forgot} of {} logs forgot anything",
        logs.len()
    );
}

/// `copies` copies of `text` in a row, each with ids of its own that sort after the copy before
/// (`msg_1…` after `msg_0…`): in the same sessions, or, `sessions`, in sessions of their own.
fn copies(text: &[u8], copies: usize, sessions: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let mut out = String::new();
    for i in 0..copies {
        let mut copy = text.to_string();
        let mut prefixes = vec!["msg_", "prt_", "call_", "toolu_"];
        if sessions {
            prefixes.push("ses_");
        }
        for p in prefixes {
            copy = copy.replace(p, &format!("{p}{i}"));
        }
        out.push_str(&copy);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.into_bytes()
}

#[test]
fn forgetting_changes_no_finding_on_logs_run_again() {
    // A log's run repeated in the same sessions closes its messages, and forgets or keeps them.
    let mut forgot = 0;
    let logs = logs();
    for path in &logs {
        let text = std::fs::read(path).expect("a fixture reads");
        for sessions in [false, true] {
            let text = copies(&text, 3, sessions);
            let expected = whole(&text);
            let (got, did) = forgetting(&text, 0);
            assert_eq!(got, expected, "{} three times", path.display());
            forgot += usize::from(did && !sessions);
        }
    }
    assert!(
        forgot >= 15,
        "only {forgot} of {} logs forgot anything",
        logs.len()
    );
}

#[test]
fn forgetting_changes_no_finding_on_mutated_logs() {
    // Lines dropped, repeated, moved, swapped with the next and cut, and part ids moved to the
    // end of their message's order: writes to messages already closed, messages and parts out
    // of order (as they arrive, and by id), tools left open, steps cut in two.
    let mut next = xorshift(0x5eed_f0a9_e771_0001);
    let mut checked = 0;
    let mut forgot = 0;
    for path in logs() {
        // Run three times, so that messages close: writes then reach messages already forgotten.
        let text = copies(&std::fs::read(&path).expect("a fixture reads"), 3, false);
        let lines: Vec<Vec<u8>> = (text.split_inclusive(|b| *b == b'\n'))
            .map(<[u8]>::to_vec)
            .collect();
        if lines.len() < 4 {
            continue;
        }
        for _ in 0..16 {
            let mut mutated = lines.clone();
            for _ in 0..1 + next() % 3 {
                let n = mutated.len();
                let i = (next() % n as u64) as usize;
                let j = (next() % n as u64) as usize;
                match next() % 6 {
                    0 => {
                        mutated.remove(i);
                    }
                    1 => mutated.insert(j, lines[i % lines.len()].clone()),
                    2 => mutated.swap(i, j),
                    // Parts of one message arriving out of id order.
                    3 => mutated.swap(i, (i + 1).min(n - 1)),
                    // A part whose id sorts after the others of its message.
                    4 => {
                        let line = String::from_utf8_lossy(&mutated[i]).into_owned();
                        mutated[i] = line.replacen("\"prt_", "\"prt_~", 1).into_bytes();
                    }
                    _ => mutated.truncate(i.max(1)),
                }
                if mutated.is_empty() {
                    break;
                }
            }
            let text = mutated.concat();
            let expected = whole(&text);
            let (got, did) = forgetting(&text, 0);
            assert_eq!(got, expected, "a mutation of {}", path.display());
            checked += 1;
            forgot += usize::from(did);
        }
    }
    // The project's own logs give about 900 mutations; the corpus adds a few hundred more.
    let least = if cfg!(rewind_corpus) { 1000 } else { 800 };
    assert!(
        checked >= least && forgot >= 120,
        "{checked} mutations, {forgot} forgot"
    );
}

/// `text` with its message, part and session ids renamed by `tag` (call ids kept).
fn renamed(text: &[u8], tag: &str) -> Vec<u8> {
    let mut copy = String::from_utf8_lossy(text).into_owned();
    for p in ["msg_", "prt_", "ses_"] {
        copy = copy.replace(p, &format!("{p}{tag}"));
    }
    copy.into_bytes()
}

#[test]
fn a_late_incident_is_read_again_keeping_only_what_it_needs() {
    // A long healthy prefix (copies in sessions of their own), then a step of zero tokens next to
    // the provider's usage, a loop exit owed a tool result, or a call id that two messages have.
    // Each needs records the prefix's forgetting went past: the log is read a second time, that
    // keeps everything from the incident's own start, so the prefix is still forgotten, and the
    // findings are the whole model's.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read(root.join(p)).expect("a fixture reads");
    let healthy = read("samples/clean-session.log");
    let prefix = copies(&healthy, 20, true);
    let cases = [
        (
            "usage-mismatch",
            read("tests/fixtures/checks/usage-mismatch.log"),
        ),
        (
            "loop-exited-early",
            read("tests/fixtures/checks/loop-exited-early.log"),
        ),
        // The same call ids, in a session's second run, in new messages.
        (
            "tool-call-duplicate",
            [renamed(&healthy, "x"), renamed(&healthy, "y")].concat(),
        ),
    ];
    for (rule, incident) in cases {
        // One session for both runs: the second run's session id is the first's.
        let incident = String::from_utf8_lossy(&incident)
            .replace("ses_y", "ses_x")
            .into_bytes();
        let text = [prefix.clone(), incident].concat();
        let analysis = replay(text.as_slice(), FileId(0)).expect("a log in memory reads");
        let found = crate::checks::run(&analysis, &|_| true);
        assert!(
            found.iter().any(|f| f.rule.as_str() == rule),
            "{rule} is not reported"
        );
        let (got, forgot, readings) = forgetting_read(&text, 0);
        assert_eq!(got, outcome(&analysis), "{rule}");
        assert_eq!(
            (readings.times, readings.whole),
            (2, false),
            "{rule}: {readings:?}"
        );
        assert!(forgot, "{rule}: the second reading kept the prefix");
    }
}

#[test]
fn a_tool_written_after_its_loop_exited_is_not_forgotten() {
    // A step of unusable reason whose only tool failed: the loop exit owes it nothing, and the
    // message may be forgotten once closed. Then the tool is written again, completed, after the
    // exit (which `loop-exited-early` reports), and the session's next run closes the message:
    // the write must keep it, or the finding would go with it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect("a fixture reads");
    let fixture = read("tests/fixtures/checks/loop-exited-early.log");
    let mut lines = Vec::new();
    let mut completed = None;
    for line in fixture.lines() {
        let mut line = line.to_owned();
        if line.contains(r#""status": "completed""#) {
            completed = Some(line.clone());
            line = line.replace(
                r#""status": "completed", "input": {"todos": []}, "output": "ok", "title": "1 todo""#,
                r#""status": "error", "input": {"todos": []}, "error": "failed""#,
            );
            assert!(line.contains(r#""status": "error""#), "the fixture changed");
        }
        if line.contains(r#""type": "step_finish""#) {
            // Tokens counted: a step of zero tokens owes even its failed calls.
            line = line.replacen(r#""input": 0"#, r#""input": 10"#, 1);
        }
        lines.push(line);
    }
    lines.push(completed.expect("the fixture has a completed tool"));
    let session = "ses_3f2a1b0c9ffeA1b2C3d4E5f6G7";
    let next_run = read("samples/clean-session.log");
    let sample_session = (next_run.split('"'))
        .find(|w| w.starts_with("ses_"))
        .expect("the sample names its session");
    let next_run = next_run
        .replace(sample_session, session)
        .replace("msg_", "msg_z")
        .replace("prt_", "prt_z");
    let text = format!("{}\n{next_run}", lines.join("\n"));
    let analysis = replay(text.as_bytes(), FileId(0)).expect("a log in memory reads");
    let found = crate::checks::run(&analysis, &|_| true);
    assert!(
        found.iter().any(|f| f.rule.as_str() == "loop-exited-early"),
        "{found:#?}"
    );
    assert_eq!(forgetting(text.as_bytes(), 0).0, outcome(&analysis));
}

#[test]
fn lines_taken_whole_read_as_framed_lines() {
    // A forgetting diagnosis takes a compact log's lines whole, without framing them, and reads
    // the log again, framed, when one is not a JSON object after all. Lines that hold two
    // objects, close in a string, carry something after the object, or begin an object the next
    // lines continue; then byte mutations of a compact log: the outcome is the whole model's
    // (whose reader frames every line).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let log = std::fs::read_to_string(root.join("tests/fixtures/checks/loop-exited-early.log"))
        .expect("a fixture reads");
    let (_, _, readings) = forgetting_read(log.as_bytes(), 0);
    assert!(!readings.reframed, "a log of JSON lines is read once");
    let tricky = [
        r#"{"type":"log","level":"info","message":"a"}{"type":"log","level":"info","message":"b"}"#,
        r#"{"type":"log","level":"info","message":"}"}"#,
        r#"{"type":"log","level":"warn","message":"x"}}"#,
        "{\"type\":\"log\",\"level\":\"warn\",\"data\":{\"n\":1}\n}",
        "{\"type\":\"log\",\"level\":\"warn\",\"message\":\"x}\n\"}",
        "{}\n{ }\n{\"a\":[1,{}]}",
    ];
    let mut reframed = 0;
    for line in tricky {
        let lines: Vec<&str> = log.lines().collect();
        let text = format!(
            "{}\n{line}\n{}\n",
            lines[..6].join("\n"),
            lines[6..].join("\n")
        );
        let (got, _, readings) = forgetting_read(text.as_bytes(), 0);
        assert_eq!(got, whole(text.as_bytes()), "{line}");
        reframed += usize::from(readings.reframed);
    }
    assert!(
        reframed >= 4,
        "{reframed} of the tricky lines were read again"
    );
    // A wrapper's 64 KiB split right after a `}` in a string: prefixed lines are framed.
    let p = "[2026-02-16T10:12:30.000Z] [INFO] ";
    let split =
        format!("{log}{p}{{\"type\":\"log\",\"level\":\"warn\",\"message\":\"a}}\n{p}b\"}}\n");
    let (got, _, readings) = forgetting_read(split.as_bytes(), 0);
    assert_eq!(got, whole(split.as_bytes()));
    assert!(!readings.reframed, "a split line was taken whole");
    let mut checked = 0;
    for i in (0..log.len()).step_by(9) {
        for b in [b'"', b'}', b'{', b'\\', b'\n', b'x'] {
            let mut bytes = log.clone().into_bytes();
            bytes[i] = b;
            let (got, _, readings) = forgetting_read(&bytes, 0);
            assert_eq!(got, whole(&bytes), "byte {i} set to {}", b as char);
            checked += 1;
            reframed += usize::from(readings.reframed);
        }
    }
    assert!(checked > 1500 && reframed > 400, "{checked} {reframed}");
}
