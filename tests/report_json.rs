//! The JSON report's per-file summary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::opencode::*;
use common::*;

/// A database is diagnosed one session at a time; its `counts` cover every session.
#[test]
fn database_counts_cover_every_session() {
    let dir = tempfile::tempdir().unwrap();
    let all = sessions();
    let parts: usize = all
        .iter()
        .flat_map(|s| &s.messages)
        .map(|m| m.parts.len())
        .sum();
    let db = build_db(&dir.path().join("opencode.db"), &all);
    for command in ["diagnose", "check"] {
        let out = rewind()
            .args([command, "--format", "json"])
            .arg(&db)
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let files = doc["files"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{command}");
        assert_eq!(files[0]["sessions"].as_array().unwrap().len(), all.len());
        assert_eq!(
            files[0]["counts"]["parts"], parts as u64,
            "{command}: {}",
            files[0]["counts"]
        );
    }
    // One session alone counts only its own.
    let (_, doc) = diagnose_json(&db, &["--session", "ses_healthy"]);
    let healthy = all.iter().find(|s| s.id == "ses_healthy").unwrap();
    let own: usize = healthy.messages.iter().map(|m| m.parts.len()).sum();
    assert_eq!(doc["files"][0]["counts"]["parts"], own as u64);
}

/// The sample HAR's entry 40 times, written in `dir` on one line: its path and text.
fn one_line_har(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let sample = std::fs::read_to_string(repo("samples/har-streaming-response.har")).unwrap();
    let mut har: serde_json::Value = serde_json::from_str(&sample).unwrap();
    let entry = har["log"]["entries"][0].clone();
    har["log"]["entries"] = serde_json::Value::Array(vec![entry; 40]);
    let path = dir.join("one-line.har");
    // serde_json writes `\u` escapes for nothing here and no newline: one ASCII line.
    let text = serde_json::to_string(&har).unwrap();
    assert!(text.is_ascii() && !text.contains('\n'));
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

/// A HAR written on one line holds a unit per entry, each with findings on line 1: every
/// position is counted exactly (on an ASCII line, the column is the offset plus one), whether
/// the entry is the first or the fortieth, and in every machine format.
#[test]
fn positions_in_a_one_line_file_of_many_units_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = one_line_har(dir.path());
    let (_, doc) = diagnose_json(&path, &[]);
    let all = findings(&doc);
    let per_entry = all.len() / 40;
    assert!(
        per_entry > 0 && all.len() == per_entry * 40,
        "{}",
        describe(&all)
    );
    let mut offsets = Vec::new();
    for f in &all {
        let offset = f["span"]["offset"].as_u64().unwrap();
        let length = f["span"]["length"].as_u64().unwrap();
        assert_eq!(f["line"], 1, "{f}");
        assert_eq!(f["column"].as_u64(), Some(offset + 1), "{f}");
        assert_eq!(f["end_line"], 1, "{f}");
        assert_eq!(f["end_column"].as_u64(), Some(offset + length + 1), "{f}");
        for r in f["related"].as_array().unwrap() {
            let offset = r["span"]["offset"].as_u64().unwrap();
            assert_eq!(r["column"].as_u64(), Some(offset + 1), "{r}");
        }
        offsets.push(offset);
    }
    // The entries' findings point into their own entries, further and further along the line.
    assert!(offsets.iter().max() > Some(&(text.len() as u64 * 9 / 10)));
    let sarif = rewind()
        .args(["diagnose", "--format", "sarif"])
        .arg(&path)
        .output()
        .unwrap();
    let sarif: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    for r in sarif["runs"][0]["results"].as_array().unwrap() {
        let region = &r["locations"][0]["physicalLocation"]["region"];
        assert_eq!(
            region["startColumn"].as_u64(),
            region["byteOffset"].as_u64().map(|o| o + 1),
            "{r}"
        );
    }
}

/// Human output of the same file shows each finding's line around its labels, however far into
/// the line they are (it used to show the line's first 140 characters, the labels pinned to
/// their end, for any label past 64 KiB).
#[test]
fn a_one_line_file_shows_each_finding_around_its_labels() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = one_line_har(dir.path());
    // Wide enough for the widest window rewind shows of a line.
    let out = rewind()
        .env("COLUMNS", "240")
        .args(["diagnose"])
        .arg(&path)
        .output()
        .unwrap();
    let human = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = human.lines().collect();
    let mut far = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(at) = line.find("one-line.har:1:") else {
            continue;
        };
        let column: usize = line[at + "one-line.har:1:".len()..]
            .trim_end_matches(']')
            .parse()
            .unwrap();
        let shown = lines[i + 1].split_once(" │ ").unwrap().1;
        let shown = shown.trim_start_matches('…').trim_end_matches('…');
        assert!(shown.len() > 100, "{shown}");
        // The shown bytes are those just before and after the label, in this entry.
        let from = column.saturating_sub(2_000);
        let to = (column + 2_000).min(text.len());
        assert!(
            text[from..to].contains(shown),
            "column {column} shows {shown}"
        );
        if column > 70_000 {
            far += 1;
        }
    }
    assert!(far > 20, "{human}");
}
