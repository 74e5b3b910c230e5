//! Baselines: the findings a project has accepted, by fingerprint, so that `rewind check
//! --baseline FILE` reports only new ones. Fingerprints do not contain line numbers (see
//! `report::record::fingerprints`), so unrelated edits to a recording keep them.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checks::Rule;
use crate::core::RewindError;
use crate::report::record::FindingRecord;

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    rule: Rule,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default)]
    message: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    tool: String,
    findings: Vec<Entry>,
}

/// Reads the fingerprints of a baseline.
pub fn read(path: &Path) -> Result<HashSet<String>, RewindError> {
    let err = |message: String| RewindError::Baseline {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let file: File = serde_json::from_str(&text).map_err(|e| {
        err(format!(
            "not a rewind baseline: {}",
            crate::text::clip(&e.to_string())
        ))
    })?;
    if file.version != 1 {
        return Err(err(format!(
            "baseline version {} is not supported",
            file.version
        )));
    }
    Ok(file.findings.into_iter().map(|e| e.fingerprint).collect())
}

/// Writes every record's fingerprint (sorted, so the file diffs well).
pub fn write(path: &Path, records: &[FindingRecord]) -> Result<(), RewindError> {
    let mut findings: Vec<Entry> = records
        .iter()
        .map(|r| Entry {
            fingerprint: r.fingerprint.clone(),
            rule: r.rule,
            // A data file, written through the safe JSON path like every machine output.
            file: r.file.as_ref().map(|f| f.unescaped().to_owned()),
            message: r.message.unescaped().to_owned(),
        })
        .collect();
    findings.sort_by(|a, b| {
        (&a.file, a.rule.as_str(), &a.fingerprint).cmp(&(&b.file, b.rule.as_str(), &b.fingerprint))
    });
    findings.dedup_by(|a, b| a.fingerprint == b.fingerprint);
    let file = File {
        version: 1,
        tool: "rewind".into(),
        findings,
    };
    let mut text = Vec::new();
    crate::report::safe_json::to_writer_pretty(&mut text, &file)?;
    text.push(b'\n');
    std::fs::write(path, text).map_err(|e| RewindError::Baseline {
        path: path.to_path_buf(),
        message: format!("cannot write: {e}"),
    })
}
