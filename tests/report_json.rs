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
