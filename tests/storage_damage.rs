//! Damaged files in OpenCode's legacy storage folder: `storage-file-damaged` and the repair that
//! moves them aside into a quarantine folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::*;
use serde_json::Value;

const FIXTURE: &str = "tests/fixtures/checks/storage-file-damaged";
const NUL_SESSION: &str = "session/prj_fixture/ses_405cda89affeNw04UbeaVEBJX2.json";
const CUT_MESSAGE: &str =
    "message/ses_3c1f0e2a9ffeC5oN6rX7fS8uZ9/msg_c5e0a2100001Pp6Qq7Rr8Ss9.json";
const EMPTY_PART: &str = "part/msg_c5e0a2000001Ii9Jj0Kk1Ll2/prt_c5e0a20000010001Mm3Nn4Oo5Q.json";

/// Copies a folder, every file dated `age` ago.
fn copy_tree(from: &Path, to: &Path, age: Duration) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target, age);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
            let f = std::fs::File::options().write(true).open(&target).unwrap();
            f.set_modified(SystemTime::now() - age).unwrap();
        }
    }
}

/// A data folder holding a copy of the fixture as its `storage/`, written `age` ago.
fn data_folder(age: Duration) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage");
    copy_tree(&repo(FIXTURE), &storage, age);
    (dir, storage)
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn repair_json(path: &Path, extra: &[&str]) -> Value {
    let out = rewind()
        .args(["repair", "--format", "json"])
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn each_damaged_file_is_named_with_what_is_wrong_and_where() {
    let path = repo(FIXTURE);
    let (code, doc) = diagnose_json(&path, &[]);
    assert_eq!(code, 1);
    let f = findings(&doc);
    let damaged = of_rule(&f, "storage-file-damaged");
    assert_eq!(damaged.len(), 3, "{}", describe(&f));
    let by_file = |rel: &str| {
        *damaged
            .iter()
            .find(|d| d["file"].as_str().unwrap().ends_with(rel))
            .unwrap_or_else(|| panic!("no finding on {rel}: {}", describe(&f)))
    };
    let nul = by_file(NUL_SESSION);
    assert!(nul["message"].as_str().unwrap().contains("all 413 bytes"));
    assert_eq!(nul["session_id"], "ses_405cda89affeNw04UbeaVEBJX2");
    assert_eq!(
        (
            nul["span"]["offset"].as_u64(),
            nul["span"]["length"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let cut = by_file(CUT_MESSAGE);
    assert!(
        cut["message"]
            .as_str()
            .unwrap()
            .contains("cut short at byte 200")
    );
    assert_eq!(cut["span"]["offset"], 199);
    assert_eq!(cut["message_id"], "msg_c5e0a2100001Pp6Qq7Rr8Ss9");
    let empty = by_file(EMPTY_PART);
    assert!(
        empty["message"]
            .as_str()
            .unwrap()
            .contains("empty (0 bytes)")
    );
    assert_eq!(empty["part_id"], "prt_c5e0a20000010001Mm3Nn4Oo5Q");
    // The rest of the folder is still diagnosed: every session, without the damaged files, and
    // no other rule reports the damaged files again.
    let sessions = doc["files"][0]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3);
    assert!(
        of_rule(&f, "undecodable-record").is_empty(),
        "{}",
        describe(&f)
    );
    let healthy = sessions
        .iter()
        .find(|s| s["id"] == "ses_3c1f0e2a9ffeB4nM5qW6eR7tY8")
        .unwrap();
    assert_eq!(healthy["messages"], 2);
}

#[test]
fn a_session_filter_keeps_the_damage_of_that_session() {
    let path = repo(FIXTURE);
    let (_, doc) = diagnose_json(&path, &["--session", "ses_3c1f0e2a9ffeC5oN6rX7fS8uZ9"]);
    let f = findings(&doc);
    let files: Vec<&str> = of_rule(&f, "storage-file-damaged")
        .iter()
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|p| !p.ends_with(NUL_SESSION)));
}

#[test]
fn repair_moves_damaged_files_into_a_quarantine_and_the_folder_reads_cleanly() {
    let (dir, storage) = data_folder(Duration::from_secs(3600));
    let before = files_under(&storage);
    let originals: Vec<(String, Vec<u8>)> = [NUL_SESSION, CUT_MESSAGE, EMPTY_PART]
        .iter()
        .map(|rel| (rel.to_string(), std::fs::read(storage.join(rel)).unwrap()))
        .collect();

    // A dry run plans the three moves and writes nothing.
    let plan = repair_json(dir.path(), &["--dry-run"]);
    assert_eq!(plan["moves"].as_array().unwrap().len(), 3, "{plan}");
    assert_eq!(plan["applied"], false);
    assert_eq!(files_under(&storage), before);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only storage/"
    );

    // The repair (given the data folder) moves them next to `storage/`, keeping their paths.
    let done = repair_json(dir.path(), &[]);
    assert_eq!(done["applied"], true);
    assert_eq!(done["verified"], true);
    assert_eq!(done["sessions_after"], 2);
    let quarantine = PathBuf::from(done["quarantine"].as_str().unwrap());
    assert_eq!(quarantine.parent(), Some(dir.path()));
    assert!(
        quarantine
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("storage.rewind-quarantine-")
    );
    for (rel, bytes) in &originals {
        assert!(!storage.join(rel).exists(), "{rel} is still in storage/");
        assert_eq!(
            &std::fs::read(quarantine.join(rel)).unwrap(),
            bytes,
            "{rel}"
        );
    }
    assert!(quarantine.join("REWIND-QUARANTINE.txt").is_file());
    let mut left = before.clone();
    left.retain(|f| {
        !originals
            .iter()
            .any(|(rel, _)| Path::new(f) == Path::new(rel))
    });
    assert_eq!(files_under(&storage), left, "only the damaged files moved");

    // Afterwards the folder reads cleanly, and a second repair has nothing to do.
    let (code, doc) = diagnose_json(&storage, &[]);
    assert_eq!(code, 0, "{}", describe(&findings(&doc)));
    let again = repair_json(&storage, &[]);
    assert_eq!(again["moves"].as_array().unwrap().len(), 0);
    assert_eq!(again["applied"], false);
    let human = rewind().arg("repair").arg(&storage).output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("nothing to repair"));
}

#[test]
fn repair_reports_where_it_moved_what() {
    let (dir, storage) = data_folder(Duration::from_secs(3600));
    // Wide enough for the table's cells and the last lines to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("repair")
        .arg(&storage)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        NUL_SESSION,
        "all 413 bytes of the file are NUL",
        "moved 3 damaged files from",
        "storage.rewind-quarantine-",
        "nothing was deleted",
        "verified:",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    drop(dir);
}

#[test]
fn files_changed_moments_ago_are_left_unless_forced() {
    let (_dir, storage) = data_folder(Duration::ZERO);
    let before = files_under(&storage);
    let left = repair_json(&storage, &[]);
    assert_eq!(left["moves"].as_array().unwrap().len(), 0);
    assert_eq!(left["not_repaired"].as_array().unwrap().len(), 3);
    assert!(
        left["not_repaired"][0]["why"]
            .as_str()
            .unwrap()
            .contains("OpenCode may be writing it")
    );
    assert_eq!(files_under(&storage), before);
    let forced = repair_json(&storage, &["--force"]);
    assert_eq!(forced["moves"].as_array().unwrap().len(), 3);
    assert_eq!(forced["verified"], true);
}

/// adversarial #12: files reached through symbolic links inside the storage folder are read, as
/// OpenCode reads them: a damaged one is reported like any other. A repair moves a link that
/// lies in the folder (never what it points to), and leaves a file whose folder lies outside
/// the storage folder (through a linked folder) where it is, saying why.
#[test]
#[cfg(unix)]
fn damaged_files_behind_symlinks_are_reported_and_nothing_outside_is_moved() {
    use std::os::unix::fs::symlink;
    let (dir, storage) = data_folder(Duration::from_secs(3600));
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    // The cut message: a link in the folder to a file outside it.
    let cut_target = outside.join("cut.json");
    std::fs::rename(storage.join(CUT_MESSAGE), &cut_target).unwrap();
    symlink(&cut_target, storage.join(CUT_MESSAGE)).unwrap();
    // The empty part: its message's part folder is a link to a folder outside.
    let part_dir = storage.join(EMPTY_PART).parent().unwrap().to_path_buf();
    let moved_dir = outside.join("parts");
    std::fs::rename(&part_dir, &moved_dir).unwrap();
    symlink(&moved_dir, &part_dir).unwrap();
    // A link back up the tree must not make the scan go round.
    symlink("..", storage.join("session/loop")).unwrap();
    let outside_before = files_under(&outside);
    let outside_bytes: Vec<Vec<u8>> = outside_before
        .iter()
        .map(|f| std::fs::read(outside.join(f)).unwrap())
        .collect();

    let (code, doc) = diagnose_json(&storage, &[]);
    assert_eq!(code, 1);
    let f = findings(&doc);
    let damaged: Vec<&str> = of_rule(&f, "storage-file-damaged")
        .iter()
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    assert_eq!(damaged.len(), 3, "{}", describe(&f));
    for rel in [NUL_SESSION, CUT_MESSAGE, EMPTY_PART] {
        assert!(
            damaged.iter().any(|p| p.ends_with(rel)),
            "{rel}: {damaged:?}"
        );
    }

    let plan = repair_json(&storage, &["--dry-run"]);
    let planned: Vec<&str> = plan["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["file"].as_str().unwrap())
        .collect();
    assert_eq!(planned, [CUT_MESSAGE, NUL_SESSION], "{plan}");
    let done = repair_json(&storage, &[]);
    assert_eq!(done["applied"], true, "{done}");
    assert_eq!(done["verified"], true, "{done}");
    let left = done["not_repaired"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{done}");
    assert_eq!(left[0]["file"], EMPTY_PART);
    assert!(
        left[0]["why"].as_str().unwrap().contains("outside"),
        "{done}"
    );
    // The link was moved, not its target; nothing outside the folder changed.
    let quarantine = PathBuf::from(done["quarantine"].as_str().unwrap());
    let moved = quarantine.join(CUT_MESSAGE);
    assert!(moved.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(!storage.join(CUT_MESSAGE).exists());
    assert_eq!(files_under(&outside), outside_before);
    for (f, bytes) in outside_before.iter().zip(&outside_bytes) {
        assert_eq!(&std::fs::read(outside.join(f)).unwrap(), bytes, "{f}");
    }
    let (code, doc) = diagnose_json(&storage, &[]);
    assert_eq!(code, 1);
    let f = findings(&doc);
    let still = of_rule(&f, "storage-file-damaged");
    assert_eq!(still.len(), 1, "{}", describe(&f));
    assert!(still[0]["file"].as_str().unwrap().ends_with(EMPTY_PART));
}
