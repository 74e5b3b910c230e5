//! OpenCode's other stores: `opencode export` documents and the legacy JSON storage folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::opencode::*;
use common::*;
use serde_json::{Value, json};

/// The PR #16751 session as `opencode export` prints it (ids inside the JSON, pretty-printed).
fn export_doc() -> Value {
    let s = &sessions()[0];
    let messages: Vec<Value> = s
        .messages
        .iter()
        .map(|m| {
            let id = msg_id(m.n);
            let mut info = m.info.clone();
            info["id"] = json!(id);
            info["sessionID"] = json!(s.id);
            let parts: Vec<Value> = m
                .parts
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let mut p = p.clone();
                    p["id"] = json!(prt_id(m.n, k as i64));
                    p["messageID"] = json!(id);
                    p["sessionID"] = json!(s.id);
                    p
                })
                .collect();
            json!({"info": info, "parts": parts})
        })
        .collect();
    // Written by 1.18.25, which sends a step's text after its `tool_use` to Anthropic.
    json!({"info": {"id": s.id, "title": s.title, "version": "1.18.25", "time": {"created": T0, "updated": T0}},
           "messages": messages})
}

#[test]
fn exports_are_detected_and_labelled_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    std::fs::write(&path, serde_json::to_string_pretty(&export_doc()).unwrap()).unwrap();
    let (code, doc) = diagnose_json(&path, &[]);
    assert_eq!(code, 1);
    assert_eq!(doc["files"][0]["format"], "opencode-export");
    let f = findings(&doc);
    let merged = &of_rule(&f, "step-merged")[0];
    assert_eq!(merged["part_id"], prt_id(11, 3));
    assert!(line(merged) > 1, "a real line of the export");
    assert!(span_text(&path, merged).starts_with('{'));
    assert_eq!(
        of_rule(&f, "tool-use-without-result").len(),
        1,
        "{}",
        describe(&f)
    );
}

#[test]
fn storage_folders_are_read_file_by_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("storage");
    let doc = export_doc();
    let sid = doc["info"]["id"].as_str().unwrap().to_owned();
    std::fs::create_dir_all(root.join("session/prj_1")).unwrap();
    std::fs::write(
        root.join(format!("session/prj_1/{sid}.json")),
        doc["info"].to_string(),
    )
    .unwrap();
    for m in doc["messages"].as_array().unwrap() {
        let mid = m["info"]["id"].as_str().unwrap();
        std::fs::create_dir_all(root.join(format!("message/{sid}"))).unwrap();
        std::fs::write(
            root.join(format!("message/{sid}/{mid}.json")),
            serde_json::to_string_pretty(&m["info"]).unwrap(),
        )
        .unwrap();
        std::fs::create_dir_all(root.join(format!("part/{mid}"))).unwrap();
        for p in m["parts"].as_array().unwrap() {
            let pid = p["id"].as_str().unwrap();
            std::fs::write(
                root.join(format!("part/{mid}/{pid}.json")),
                serde_json::to_string_pretty(p).unwrap(),
            )
            .unwrap();
        }
    }
    // The data directory (holding `storage/`) is accepted as well as the folder itself.
    for given in [dir.path().to_path_buf(), root.clone()] {
        let (code, doc) = diagnose_json(&given, &[]);
        assert_eq!(code, 1);
        assert_eq!(doc["files"][0]["format"], "opencode-storage");
        let f = findings(&doc);
        let dropped = &of_rule(&f, "tool-error-dropped")[0];
        let file = dropped["file"].as_str().unwrap();
        assert!(file.ends_with(&format!("{}.json", prt_id(11, 2))), "{file}");
        assert_eq!(span_text(std::path::Path::new(file), dropped), "\"error\"");
        assert_eq!(of_rule(&f, "step-merged").len(), 1);
    }
    // Any other folder is refused with a clear message.
    let empty = tempfile::tempdir().unwrap();
    let out = rewind().arg("diagnose").arg(empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an OpenCode storage folder"));
}
