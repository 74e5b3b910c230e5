//! `rewind check --shard K/N` and `rewind merge`: N shards merged print what one run prints, byte
//! for byte, in every format merge reads; every file lands in exactly one shard; reports that do
//! not make one run are refused with one line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use serde_json::Value;

/// A tree with findings in many files, files of several units (databases), files that are not
/// recordings (skipped), a named file that is not one (an error) and a path that does not exist.
const TREE: &[&str] = &[
    "README.md",
    "samples",
    "tests/fixtures/rules",
    "tests/fixtures/checks",
    "tests/fixtures/kilo",
    "tests/fixtures/opencode-v2",
    "no-such-folder",
];

const FORMATS: &[&str] = &["json", "jsonl", "sarif", "junit"];

fn run(args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = rewind().current_dir(repo(".")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn check(format: &str, extra: &[&str]) -> (i32, Vec<u8>) {
    let mut args = vec!["check", "--format", format];
    args.extend_from_slice(extra);
    args.extend_from_slice(TREE);
    let (code, out, _) = run(&args);
    (code, out)
}

/// Each shard's report of `format`, written to `dir`.
fn shards(dir: &Path, format: &str, count: u64, extra: &[&str]) -> Vec<String> {
    (0..count)
        .map(|k| {
            let shard = format!("{k}/{count}");
            let mut args = vec!["--shard", &shard];
            args.extend_from_slice(extra);
            let (code, out) = check(format, &args);
            assert!(matches!(code, 0..=2), "{shard}: {code}");
            let path = dir.join(format!("shard-{k}-of-{count}.{format}"));
            std::fs::write(&path, out).unwrap();
            path.to_string_lossy().into_owned()
        })
        .collect()
}

fn merge(reports: &[String], extra: &[&str]) -> (i32, Vec<u8>, String) {
    let mut args = vec!["merge"];
    args.extend_from_slice(extra);
    args.extend(reports.iter().map(String::as_str));
    run(&args)
}

fn same(format: &str, count: u64, one: &[u8], merged: &[u8]) {
    if one != merged {
        let (a, b) = (
            String::from_utf8_lossy(one),
            String::from_utf8_lossy(merged),
        );
        let at = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        panic!(
            "{format}, {count} shards: the merge differs from one run at line {}:\n  one run: {}\n  merged:  {}",
            at + 1,
            a.lines().nth(at).unwrap_or_default(),
            b.lines().nth(at).unwrap_or_default()
        );
    }
}

#[test]
fn shards_merged_print_what_one_run_prints_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for format in FORMATS {
        let (code, one) = check(format, &[]);
        // The tree has an unreadable input: the run's status is 2, and the merge's.
        assert_eq!(code, 2, "{format}");
        for count in [1, 2, 3, 7] {
            let reports = shards(dir.path(), format, count, &[]);
            let (code, merged, stderr) = merge(&reports, &[]);
            same(format, count, &one, &merged);
            assert_eq!(code, 2, "{format} {count}: {stderr}");
            assert!(stderr.contains("`no-such-folder`: "), "{stderr}");
            // The merge puts the shards back in order whatever order they are given in.
            if count > 2 {
                let mut shuffled = reports.clone();
                shuffled.reverse();
                same(format, count, &one, &merge(&shuffled, &[]).1);
            }
        }
    }
}

#[test]
fn a_file_listed_twice_is_merged_as_one_run_prints_it() {
    // Named first, then found again in its folder after another folder: one run reports it
    // twice, under one JSON file entry and one JUnit test case.
    let tree = [
        "samples/zod-failed-status.log",
        "tests/fixtures/rules",
        "samples",
    ];
    let dir = tempfile::tempdir().unwrap();
    for format in FORMATS {
        let mut args = vec!["check", "--format", format];
        args.extend_from_slice(&tree);
        let (_, one, _) = run(&args);
        for count in [3, 7] {
            let reports: Vec<String> = (0..count)
                .map(|k| {
                    let shard = format!("{k}/{count}");
                    let mut args = vec!["check", "--format", format, "--shard", &shard];
                    args.extend_from_slice(&tree);
                    let path = dir.path().join(format!("twice-{k}.{format}"));
                    std::fs::write(&path, run(&args).1).unwrap();
                    path.to_string_lossy().into_owned()
                })
                .collect();
            same(format, count, &one, &merge(&reports, &[]).1);
        }
    }
}

#[test]
fn a_baseline_applied_after_the_merge_drops_what_check_drops() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let baseline_arg = baseline.to_string_lossy().into_owned();
    // A baseline of part of the tree: some findings are dropped, others kept.
    let (code, _, stderr) = run(&[
        "check",
        "--write-baseline",
        &baseline_arg,
        "samples",
        "tests/fixtures/rules",
    ]);
    assert_eq!(code, 0, "{stderr}");
    for format in FORMATS {
        // `--fail-on warning`: a case whose errors are all baselined may stop failing (JUnit).
        let (code, one) = check(
            format,
            &["--fail-on", "warning", "--baseline", &baseline_arg],
        );
        assert_eq!(code, 2, "{format}");
        let (_, unfiltered) = check(format, &["--fail-on", "warning"]);
        assert_ne!(one, unfiltered, "{format}: the baseline dropped nothing");
        for count in [1, 3, 7] {
            let reports = shards(dir.path(), format, count, &["--fail-on", "warning"]);
            let (_, merged, _) = merge(&reports, &["--baseline", &baseline_arg]);
            same(format, count, &one, &merged);
        }
    }
}

#[test]
fn merging_clean_shards_exits_as_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    for format in FORMATS {
        let args = ["check", "--format", format, "samples"];
        let (code, one, _) = run(&args);
        assert_eq!(code, 1);
        let reports: Vec<String> = (0..3)
            .map(|k| {
                let shard = format!("{k}/3");
                let (_, out, _) = run(&["check", "--format", format, "--shard", &shard, "samples"]);
                let path = dir.path().join(format!("s{k}.{format}"));
                std::fs::write(&path, out).unwrap();
                path.to_string_lossy().into_owned()
            })
            .collect();
        let (code, merged, _) = merge(&reports, &[]);
        assert_eq!(code, 1, "{format}");
        same(format, 3, &one, &merged);
        let (code, _, _) = merge(&reports, &["--exit-zero"]);
        assert_eq!(code, 0, "{format}");
    }
}

/// The positions a shard's JSON report holds, and the files it reports.
fn ledger(report: &[u8]) -> (Vec<u64>, Vec<String>, u64) {
    let doc: Value = serde_json::from_slice(report).unwrap();
    let positions = doc["shard"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["position"].as_u64().unwrap())
        .collect();
    let files = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    (positions, files, doc["shard"]["files"].as_u64().unwrap())
}

#[test]
fn every_file_lands_in_exactly_one_shard() {
    for count in [1, 2, 3, 7] {
        let mut positions = BTreeSet::new();
        let mut reported = BTreeSet::new();
        let mut total = None;
        let mut empty = 0;
        for k in 0..count {
            let (_, out) = check("json", &["--shard", &format!("{k}/{count}")]);
            let (held, files, whole) = ledger(&out);
            assert_eq!(*total.get_or_insert(whole), whole);
            if held.is_empty() {
                empty += 1;
            }
            for p in held {
                assert!(positions.insert(p), "file {p} in two shards of {count}");
            }
            for f in files {
                assert!(reported.insert(f.clone()), "{f} in two shards of {count}");
            }
        }
        let total = total.unwrap();
        assert_eq!(positions, (0..total).collect(), "{count} shards");
        assert!(total > 100, "{total}");
        let _ = empty;
    }
    // Some shards are empty: 7 shards of the 8 samples.
    let empty = (0..7)
        .filter(|k| {
            let shard = format!("{k}/7");
            let (_, out, _) = run(&["check", "--format", "json", "--shard", &shard, "samples"]);
            ledger(&out).0.is_empty()
        })
        .count();
    assert!(empty > 0);
}

#[test]
fn a_shard_is_stable_whatever_the_root_is_called() {
    // The same files under two roots: each shard holds the same names.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for root in [a.path(), b.path()] {
        let nested = root.join("deep/er");
        std::fs::create_dir_all(&nested).unwrap();
        for s in [
            "zod-failed-status.log",
            "clean-session.log",
            "step-without-finish.log",
        ] {
            std::fs::copy(repo("samples").join(s), root.join(s)).unwrap();
            std::fs::copy(repo("samples").join(s), nested.join(s)).unwrap();
        }
    }
    for k in 0..3 {
        let names = |root: &Path| {
            let shard = format!("{k}/3");
            let (_, out, _) = run(&[
                "check",
                "--format",
                "json",
                "--shard",
                &shard,
                &root.to_string_lossy(),
            ]);
            let (_, files, _) = ledger(&out);
            files
                .iter()
                .map(|f| {
                    f.rsplit_once(&*root.file_name().unwrap().to_string_lossy())
                        .unwrap()
                        .1
                        .to_owned()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(names(a.path()), names(b.path()), "shard {k}/3");
    }
}

#[test]
fn bad_shard_values_are_one_line_and_status_2() {
    for (value, says) in [
        ("3/3", "shards count from 0"),
        ("1", "expected K/N"),
        ("0/0", "at least 1"),
        ("x/2", "whole number"),
    ] {
        let (code, out, stderr) = run(&["check", "--shard", value, "samples"]);
        assert_eq!(code, 2, "{value}");
        assert!(out.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{value}: {stderr}");
    }
    let (code, _, stderr) = run(&["check", "--shard", "0/2", "-"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("standard input"), "{stderr}");
}

#[test]
fn without_shard_the_report_carries_no_ledger() {
    for format in FORMATS {
        let (_, out, _) = run(&["check", "--format", format, "samples"]);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("\"list\""), "{format}");
        assert!(!text.contains("rewind.shard"), "{format}");
    }
}

#[test]
fn reports_that_do_not_make_one_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = shards(dir.path(), "json", 3, &[]);
    let sarif = shards(dir.path(), "sarif", 3, &[]);
    let refused = |reports: &[String], says: &str| {
        let (code, out, stderr) = merge(reports, &[]);
        assert_eq!(code, 2, "{says}: {stderr}");
        assert!(out.is_empty(), "{says}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.len() <= 1000);
        assert!(stderr.contains(says), "{says}: {stderr}");
    };
    refused(&json[..2], "1 of the 3 shards is missing (2/3");
    refused(
        &[json[0].clone(), json[0].clone(), json[1].clone()],
        "again",
    );
    refused(
        &[json[0].clone(), sarif[1].clone(), json[2].clone()],
        "one format",
    );
    // A report without a ledger (a run without --shard).
    let (_, plain) = check("json", &[]);
    let plain_path = dir.path().join("plain.json");
    std::fs::write(&plain_path, plain).unwrap();
    refused(
        &[plain_path.to_string_lossy().into_owned()],
        "no shard ledger",
    );
    // Shards of another run (another shard count, another list).
    let other = dir.path().join("other.json");
    let (_, out, _) = run(&["check", "--format", "json", "--shard", "1/3", "samples"]);
    std::fs::write(&other, out).unwrap();
    refused(
        &[
            json[0].clone(),
            other.to_string_lossy().into_owned(),
            json[2].clone(),
        ],
        "another run",
    );
    // Another rewind version.
    let text = std::fs::read_to_string(&json[1]).unwrap();
    let older = dir.path().join("older.json");
    std::fs::write(
        &older,
        text.replace(
            &format!("\"rewind\": \"{}\"", env!("CARGO_PKG_VERSION")),
            "\"rewind\": \"0.0.1\"",
        ),
    )
    .unwrap();
    refused(
        &[
            json[0].clone(),
            older.to_string_lossy().into_owned(),
            json[2].clone(),
        ],
        "written by rewind 0.0.1",
    );
    // Not a report at all.
    refused(
        &[repo("README.md").to_string_lossy().into_owned()],
        "not a report",
    );
    // A JUnit report edited to carry a raw bidirectional override.
    let junit = shards(dir.path(), "junit", 1, &[]);
    let text = std::fs::read_to_string(&junit[0]).unwrap();
    let at = text.find("<testcase name=\"").unwrap() + 16;
    std::fs::write(&junit[0], format!("{}\u{202e}{}", &text[..at], &text[at..])).unwrap();
    refused(&junit, "raw control or bidirectional character");
}

#[test]
fn an_edited_json_lines_report_passes_on_no_raw_control_character() {
    let dir = tempfile::tempdir().unwrap();
    let reports = shards(dir.path(), "jsonl", 2, &[]);
    let text = std::fs::read_to_string(&reports[0]).unwrap();
    // JSON allows these raw in a string (not C0 controls such as ESC, which do not parse).
    let edited = text.replacen("\"message\":\"", "\"message\":\"\u{202e}\u{85}", 1);
    assert_ne!(edited, text);
    std::fs::write(&reports[0], edited).unwrap();
    let (_, merged, _) = merge(&reports, &[]);
    let merged = String::from_utf8(merged).unwrap();
    assert!(!merged.contains('\u{202e}') && !merged.contains('\u{85}'));
    assert!(merged.contains("\\u202e\\u0085"), "{merged}");
}

/// An agent log whose one step starts `n` tools named `tool` that are left running: `n` alike
/// `tool-never-finished` findings, and one `step-unclosed`.
fn running_tools(n: usize, tool: &str) -> String {
    let (s, m) = ("ses_000001", "msg_00000001");
    let tool = serde_json::to_string(tool).unwrap();
    let mut text = format!(
        "{{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_start\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"step-start\"}}}}\n"
    );
    for i in 0..n {
        text.push_str(&format!(
            "{{\"type\":\"tool_use\",\"timestamp\":{t},\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_{i:08}\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"tool\",\"callID\":\"call_{i:08}\",\"tool\":{tool},\"state\":{{\"status\":\"running\",\"input\":{{\"command\":\"ls\"}},\"time\":{{\"start\":{t}}}}}}}}}\n",
            t = i + 2
        ));
    }
    text
}

#[test]
fn findings_written_as_they_come_merge_as_one_run_prints_them() {
    // The JSON, SARIF and JUnit printers write each file's findings as it comes; a shard's ledger
    // is taken from what they wrote. Many findings in several files, a tool name that escapes
    // to more bytes in XML, and a baseline of one file, whose lines the merge cuts out.
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for (k, (n, tool)) in [
        (400, "bash"),
        (3, "<w&r\"i'te>"),
        (250, "re\u{202e}ad"),
        (0, "x"),
        (120, "grep"),
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::write(tree.join(format!("run-{k}.log")), running_tools(n, tool)).unwrap();
    }
    let at = |args: &[&str]| {
        let out = rewind()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), out.stdout)
    };
    let (code, _) = at(&[
        "check",
        "--write-baseline",
        "baseline.json",
        "tree/run-1.log",
    ]);
    assert_eq!(code, 0);
    for format in FORMATS {
        for baseline in [false, true] {
            let extra: &[&str] = if baseline {
                &["--baseline", "baseline.json"]
            } else {
                &[]
            };
            let mut args = vec!["check", "--format", format];
            args.extend_from_slice(extra);
            args.push("tree");
            let (code, one) = at(&args);
            assert_eq!(code, 1, "{format}");
            for count in [1, 2, 3] {
                let mut reports = Vec::new();
                for k in 0..count {
                    let shard = format!("{k}/{count}");
                    let (code, out) = at(&["check", "--format", format, "--shard", &shard, "tree"]);
                    assert!(matches!(code, 0 | 1), "{format} {shard}");
                    let path = dir.path().join(format!("s{k}-of-{count}.{format}"));
                    std::fs::write(&path, out).unwrap();
                    reports.push(path.to_string_lossy().into_owned());
                }
                let mut args = vec!["merge"];
                args.extend_from_slice(extra);
                args.extend(reports.iter().map(String::as_str));
                let (code, merged) = at(&args);
                assert_eq!(code, 1, "{format} {count}");
                same(format, count, &one, &merged);
            }
        }
    }
}
