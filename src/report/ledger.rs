//! A shard's ledger: what `rewind check --shard K/N` adds to its JSON, JSON Lines, SARIF and
//! JUnit reports so that `rewind merge` can rebuild, byte for byte, the report one run over every
//! file prints. It says where each of the shard's files stands in the whole run's list and how
//! much of the report each one wrote; the merged report leaves it out.
//!
//! Where it is: JSON, a last member `"shard"` of the document; JSON Lines, a last line
//! `{"shard": …}` after the summary; SARIF, the run's property bag (`runs[0].properties.shard`);
//! JUnit, a `<properties>` element of the test suite with one `rewind.shard` property whose
//! value is the ledger as JSON.

use serde::{Deserialize, Serialize};

use crate::checks::diagnostic::Severity;

/// The version of the ledger's shape: `rewind merge` reads only its own.
pub const LEDGER_VERSION: u32 = 1;

/// What a shard's report needs for a merge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub version: u32,
    /// The rewind version that wrote the report.
    pub rewind: String,
    /// The report's format (`json`, `jsonl`, `sarif`, `junit`).
    pub format: String,
    /// This shard, 0-based, of `count`.
    pub index: u64,
    pub count: u64,
    /// Files in the whole run's list (every shard's).
    pub files: usize,
    /// A digest of the whole list (each file's shard key and shown path, in order): shards that
    /// saw different files do not merge.
    pub list: String,
    /// The errors about arguments (a path that matches nothing) that open the report's errors:
    /// every shard has the same.
    pub arguments: usize,
    /// The severity from which a finding fails the run (JUnit's failures depend on it).
    pub fail_on: Severity,
    /// This shard's files, in order.
    pub entries: Vec<Entry>,
    /// JUnit only: each finding of the report's test cases, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<Line>,
}

/// One file of the shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Its place in the whole run's list, from 0.
    pub position: usize,
    pub outcome: Outcome,
    /// The units it was diagnosed in (checked files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<UnitEntry>,
}

/// What became of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Checked,
    /// Not a recording (no report of its own; counted in JSON Lines' summary).
    Skipped,
    /// Could not be read: one error of the report's errors.
    Failed,
}

/// One diagnosed unit of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitEntry {
    /// The file as the report names it.
    pub file: String,
    pub sessions: usize,
    pub findings: usize,
}

/// One finding of a JUnit failure: its severity and fingerprint (for a baseline), and the bytes
/// of its line in the failure's text as written (escaped).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    pub severity: Severity,
    pub fingerprint: String,
    pub bytes: usize,
}

impl Ledger {
    /// The ledger of shard `index` of `count`, before any file.
    pub fn new(index: u64, count: u64, files: usize, list: String, fail_on: Severity) -> Ledger {
        Ledger {
            version: LEDGER_VERSION,
            rewind: env!("CARGO_PKG_VERSION").to_owned(),
            format: String::new(),
            index,
            count,
            files,
            list,
            arguments: 0,
            fail_on,
            entries: Vec::new(),
            lines: Vec::new(),
        }
    }
}
