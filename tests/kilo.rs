//! Kilo Code CLI's database (`kilo.db`): OpenCode's session/message/part schema, recorded by
//! the real `kilo` 7.7.7 (`tests/fixtures/kilo/7.7.7/`, its README says how). rewind reads,
//! diagnoses and repairs it as an OpenCode database, names Kilo where it names the client, and
//! `rewind sessions` finds it in Kilo's data folder and through `KILO_DB`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

const VERSION: &str = "7.7.7";

fn fixture(scenario: &str) -> PathBuf {
    repo(&format!(
        "tests/fixtures/kilo/{VERSION}/{scenario}/kilo.sql"
    ))
}

/// The recording as the database Kilo wrote, at `path`.
fn build(scenario: &str, path: &Path) {
    let sql = std::fs::read_to_string(fixture(scenario)).unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&sql).unwrap();
}

fn severe(doc: &Value) -> Vec<String> {
    findings(doc)
        .iter()
        .filter(|f| f["severity"] == "warning" || f["severity"] == "error")
        .map(|f| format!("{} {}", f["rule"], f["message"]))
        .collect()
}

fn rules(doc: &Value) -> Vec<String> {
    findings(doc)
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| f["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn healthy_recordings_diagnose_clean() {
    let dir = tempfile::tempdir().unwrap();
    // resume_after_repair: Kilo continued the session rewind repaired, and stored a clean one.
    for scenario in ["healthy", "tool", "resume_after_repair"] {
        let (code, doc) = diagnose_json(&fixture(scenario), &[]);
        assert_eq!(code, 0, "{scenario}: {doc}");
        assert!(severe(&doc).is_empty(), "{scenario}: {:?}", severe(&doc));
        // The database itself, named as Kilo names it.
        let db = dir.path().join(scenario).join("kilo.db");
        build(scenario, &db);
        let (code, doc) = diagnose_json(&db, &[]);
        assert_eq!(code, 0, "{scenario}: {doc}");
        assert!(severe(&doc).is_empty(), "{scenario}: {:?}", severe(&doc));
    }
}

#[test]
fn a_kill_mid_tool_names_its_cause_and_repairs() {
    let (code, doc) = diagnose_json(&fixture("kill_tool"), &[]);
    assert_eq!(code, 1, "{doc}");
    let rules = rules(&doc);
    for rule in ["tool-never-finished", "step-unclosed"] {
        assert!(rules.iter().any(|r| r == rule), "{rule} not in {rules:?}");
    }

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kilo.db");
    build("kill_tool", &db);
    let out = rewind()
        .args(["repair", "--force"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // What the repair says and writes names no other client than the one that was running.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("OpenCode"), "{said}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let data: String = conn
        .query_row(
            "SELECT data FROM part WHERE data LIKE '%closed by rewind repair%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(data.contains("when the agent stopped"), "{data}");
    assert!(!data.contains("OpenCode"), "{data}");
    let (code, doc) = diagnose_json(&db, &[]);
    assert!(
        findings(&doc).iter().all(|f| f["severity"] != "error"),
        "{code}: {doc}"
    );
}

#[test]
fn the_rebuilt_request_says_kilo_sends_it() {
    // Kilo 7.7.7, resuming the killed session, sent the interrupted call with the result
    // "[Tool execution was interrupted]" (requests.jsonl of resume_after_kill_tool): the same
    // messages rewind rebuilds.
    let out = rewind()
        .arg("request")
        .arg(fixture("kill_tool"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(as Kilo, by the rules of OpenCode"),
        "{text}"
    );
    assert!(
        text.contains("tool_result call_sleeptool_1 error"),
        "{text}"
    );
    let sent = std::fs::read_to_string(repo(&format!(
        "tests/fixtures/kilo/{VERSION}/resume_after_kill_tool/requests.jsonl"
    )))
    .unwrap();
    assert!(sent.contains(r#""content": "[Tool execution was interrupted]""#));

    // An OpenCode database is still OpenCode's.
    let out = rewind()
        .arg("request")
        .arg(repo(
            "tests/fixtures/matrix/opencode/1.14.41/kill_tool/opencode.sql",
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Kilo"), "{text}");
}

fn sessions(home: &Path, env: &[(&str, &Path)]) -> Value {
    let mut cmd = rewind();
    cmd.env("HOME", home).env("USERPROFILE", home);
    for k in [
        "XDG_DATA_HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "OPENCODE_DB",
        "KILO_DB",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.args(["sessions", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn kilo_stores(doc: &Value) -> Vec<(String, u64)> {
    doc["stores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "kilo-database")
        .map(|s| {
            (
                s["store"].as_str().unwrap().to_owned(),
                s["sessions"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn sessions_finds_kilo_db_in_its_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    build("tool", &home.join(".local/share/kilo/kilo.db"));
    let doc = sessions(&home, &[]);
    assert_eq!(kilo_stores(&doc), [("kilo.db".to_owned(), 1)]);

    // XDG_DATA_HOME moves the data folder; the default one is searched too.
    let xdg = dir.path().join("xdg");
    build("healthy", &xdg.join("kilo/kilo.db"));
    let doc = sessions(&home, &[("XDG_DATA_HOME", &xdg)]);
    assert_eq!(
        kilo_stores(&doc),
        [
            ("kilo.db in $XDG_DATA_HOME/kilo".to_owned(), 1),
            ("kilo.db in ~/.local/share/kilo".to_owned(), 1)
        ]
    );

    // KILO_DB names a database elsewhere.
    let other = dir.path().join("elsewhere/mine.db");
    build("kill_tool", &other);
    let doc = sessions(&home, &[("KILO_DB", &other)]);
    let stores = kilo_stores(&doc);
    assert_eq!(stores[1], ("$KILO_DB".to_owned(), 1), "{stores:?}");
    let searched: Vec<&str> = doc["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    assert!(searched.contains(&"Kilo database"), "{searched:?}");
}

#[test]
fn an_export_kilo_refuses_to_import_is_named_and_repaired() {
    // `kilo export` of the tool session with the tool's status edited to `failed`: Kilo 7.7.7's
    // import refused it ("Expected ToolState", kilo-import.txt) and imported the copy rewind
    // repaired.
    let export = repo(&format!(
        "tests/fixtures/kilo/{VERSION}/import_malformed/export.json"
    ));
    let (code, doc) = diagnose_json(&export, &[]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(rules(&doc), ["schema-violation"]);

    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("export.json");
    std::fs::copy(&export, &copy).unwrap();
    let out = rewind().arg("repair").arg(&copy).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let (code, doc) = diagnose_json(&dir.path().join("export.repaired.json"), &[]);
    assert_eq!(code, 0, "{doc}");
}

#[test]
fn sessions_lists_a_kilo_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("kilo");
    build("healthy", &data.join("kilo.db"));
    build("kill_tool", &data.join("kilo-dev.db"));
    let out = rewind()
        .arg("sessions")
        .arg(&data)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        kilo_stores(&doc),
        [("kilo.db".to_owned(), 1), ("kilo-dev.db".to_owned(), 1)]
    );
    let out = rewind().arg("sessions").arg(&data).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Kilo data folder"), "{text}");
    assert!(!text.contains("opencode.db"), "{text}");
}
