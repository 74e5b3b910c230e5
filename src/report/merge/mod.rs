//! `rewind merge`: the reports of `rewind check --shard K/N` (every shard's, one format) joined
//! into the report one run over every file prints, byte for byte: files in the run's order, the
//! findings in it, the errors after the errors about arguments (which every shard has), the
//! totals counted again, one SARIF run, one JUnit suite. A baseline given to the merge drops its
//! findings afterwards, as `check --baseline` does.
//!
//! Each shard's ledger ([`super::ledger`]) says where its files stand in the whole list; the
//! parts of the report each file wrote are taken from that shard's report as written (as JSON
//! values, JSON Lines lines, XML blocks), never rebuilt from less, so what a one-file run would
//! have printed is what the merge prints.

mod json;
mod jsonl;
mod junit;
mod sarif;

use std::collections::HashSet;

use super::Totals;
use super::ledger::{Entry, LEDGER_VERSION, Ledger, Outcome};
use crate::checks::diagnostic::Severity;

/// A report format `merge` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Json,
    Jsonl,
    Sarif,
    Junit,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Json => "json",
            Kind::Jsonl => "jsonl",
            Kind::Sarif => "sarif",
            Kind::Junit => "junit",
        }
    }
}

/// Why reports do not merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// One report is not what merge reads.
    #[error("`{input}`: {message}")]
    Input { input: String, message: String },
    /// The reports do not make one run.
    #[error("{0}")]
    Set(String),
}

/// The merged report and what the exit status depends on.
#[derive(Debug)]
pub struct Merged {
    pub bytes: Vec<u8>,
    /// The findings kept, by severity.
    pub totals: Totals,
    /// The errors of the run, (file, error): the arguments that matched nothing first (`arguments`
    /// of them), then the files that could not be read.
    pub errors: Vec<(String, String)>,
    pub arguments: usize,
    pub fail_on: Severity,
    /// Files checked (every shard's).
    pub checked: usize,
}

impl Merged {
    /// The merged `bytes` with what the run of `reports` says about itself.
    fn of(
        bytes: Vec<u8>,
        totals: Totals,
        errors: Vec<(String, String)>,
        reports: &[Report<'_>],
    ) -> Merged {
        Merged {
            bytes,
            totals,
            errors,
            arguments: reports[0].ledger.arguments,
            fail_on: reports[0].ledger.fail_on,
            checked: counted(reports).0,
        }
    }
}

/// One shard's report, read.
struct Report<'a> {
    name: &'a str,
    ledger: Ledger,
    /// For each entry of the ledger: its first finding (in the report's order).
    findings_at: Vec<usize>,
    /// For each entry of the ledger: its error's index in the report's errors (failed files).
    error_at: Vec<usize>,
}

impl Report<'_> {
    fn err(&self, message: impl Into<String>) -> MergeError {
        MergeError::Input {
            input: self.name.to_owned(),
            message: message.into(),
        }
    }

    /// Findings in the report.
    fn findings(&self) -> usize {
        self.ledger
            .entries
            .iter()
            .flat_map(|e| &e.units)
            .map(|u| u.findings)
            .sum()
    }

    /// Errors in the report: those about arguments, then the failed files'.
    fn errors(&self) -> usize {
        self.ledger.arguments
            + self
                .ledger
                .entries
                .iter()
                .filter(|e| e.outcome == Outcome::Failed)
                .count()
    }

    /// The report's files in the order their first unit names them, with the units' findings
    /// (in order): a JUnit case or a JSON file entry each.
    fn files(&self) -> Vec<(&str, usize)> {
        let mut order: Vec<(&str, usize)> = Vec::new();
        let mut index: crate::FastMap<&str, usize> = crate::FastMap::default();
        for unit in self.ledger.entries.iter().flat_map(|e| &e.units) {
            match index.get(unit.file.as_str()) {
                Some(&k) => order[k].1 += unit.findings,
                None => {
                    index.insert(&unit.file, order.len());
                    order.push((&unit.file, unit.findings));
                }
            }
        }
        order
    }
}

/// A step of the merged run: entry `entry` of report `report`, in the whole list's order.
#[derive(Clone, Copy, Debug)]
struct Step {
    report: usize,
    entry: usize,
}

/// Reads which format `bytes` is.
fn kind_of(name: &str, bytes: &[u8]) -> Result<Kind, MergeError> {
    let err = |message: &str| MergeError::Input {
        input: name.to_owned(),
        message: message.to_owned(),
    };
    let text = bytes.trim_ascii_start();
    if text.starts_with(b"<?xml") {
        return Ok(Kind::Junit);
    }
    if !text.starts_with(b"{") {
        return Err(err(
            "not a report merge reads: it reads `rewind check --shard K/N` reports in JSON, JSON Lines, SARIF or JUnit",
        ));
    }
    // As the printers write them: the JSON document indented (its first line `{`), SARIF
    // compact from its `$schema`, JSON Lines an object a line.
    let first_line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    if first_line.trim_ascii() == b"{" {
        Ok(Kind::Json)
    } else if text.starts_with(b"{\"$schema\"") {
        Ok(Kind::Sarif)
    } else {
        Ok(Kind::Jsonl)
    }
}

/// Reads a ledger from its JSON value.
fn ledger_of(name: &str, value: serde_json::Value) -> Result<Ledger, MergeError> {
    let err = |message: String| MergeError::Input {
        input: name.to_owned(),
        message,
    };
    if let Some(v) = value.get("version").and_then(serde_json::Value::as_u64)
        && v != u64::from(LEDGER_VERSION)
    {
        return Err(err(format!(
            "its shard ledger has version {v}; this rewind reads version {LEDGER_VERSION}: merge with the rewind that wrote the reports"
        )));
    }
    serde_json::from_value(value).map_err(|e| {
        err(format!(
            "its shard ledger is damaged: {}",
            crate::text::clip(&e.to_string())
        ))
    })
}

/// The JSON object report `name` holds; `what` names the kind of report in the refusal.
fn object_of(
    name: &str,
    bytes: &[u8],
    what: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, MergeError> {
    serde_json::from_slice(bytes).map_err(|e| MergeError::Input {
        input: name.to_owned(),
        message: format!("not {what}: {}", crate::text::clip(&e.to_string())),
    })
}

fn no_ledger(name: &str) -> MergeError {
    MergeError::Input {
        input: name.to_owned(),
        message: "has no shard ledger: merge reads the reports of `rewind check --shard K/N` (`--format json`, `jsonl`, `sarif` or `junit`)".to_owned(),
    }
}

/// Merges the reports `inputs` (name, content), then drops the findings `baseline` holds.
pub fn merge(
    inputs: &[(String, Vec<u8>)],
    baseline: Option<&HashSet<String>>,
) -> Result<Merged, MergeError> {
    let Some((first_name, first_bytes)) = inputs.first() else {
        return Err(MergeError::Set("no report to merge".to_owned()));
    };
    let kind = kind_of(first_name, first_bytes)?;
    for (name, bytes) in &inputs[1..] {
        let other = kind_of(name, bytes)?;
        if other != kind {
            return Err(MergeError::Input {
                input: name.clone(),
                message: format!(
                    "is {} and `{}` is {}: merge the reports of one format",
                    other.name(),
                    crate::text::clip(first_name),
                    kind.name()
                ),
            });
        }
    }
    match kind {
        Kind::Json => json::merge(inputs, baseline),
        Kind::Jsonl => jsonl::merge(inputs, baseline),
        Kind::Sarif => sarif::merge(inputs, baseline),
        Kind::Junit => junit::merge(inputs, baseline),
    }
}

/// Checks that the reports are every shard of one run, and orders their files as the run's list
/// does.
fn plan<'a>(
    kind: Kind,
    inputs: Vec<(&'a str, Ledger)>,
) -> Result<(Vec<Report<'a>>, Vec<Step>), MergeError> {
    let mut reports: Vec<Report<'a>> = Vec::new();
    for (name, ledger) in inputs {
        let mut findings_at = Vec::with_capacity(ledger.entries.len());
        let mut error_at = Vec::with_capacity(ledger.entries.len());
        let (mut f, mut e) = (0, ledger.arguments);
        for entry in &ledger.entries {
            findings_at.push(f);
            error_at.push(e);
            f += entry.units.iter().map(|u| u.findings).sum::<usize>();
            if entry.outcome == Outcome::Failed {
                e += 1;
            }
        }
        reports.push(Report {
            name,
            ledger,
            findings_at,
            error_at,
        });
    }
    let Some(first) = reports.first() else {
        return Err(MergeError::Set("no report to merge".to_owned()));
    };
    let ours = env!("CARGO_PKG_VERSION");
    for r in &reports {
        if r.ledger.rewind != ours {
            return Err(r.err(format!(
                "was written by rewind {}; this is rewind {ours}: merge with the rewind that wrote the reports",
                crate::text::clip(&r.ledger.rewind)
            )));
        }
        if r.ledger.format != kind.name() {
            return Err(r.err(format!(
                "its ledger says {} but the report is {}: it was edited",
                crate::text::clip(&r.ledger.format),
                kind.name()
            )));
        }
    }
    let count = first.ledger.count;
    for r in &reports[1..] {
        let same = |what: &str, a: String, b: String| -> Result<(), MergeError> {
            if a == b {
                Ok(())
            } else {
                Err(r.err(format!(
                    "is a shard of another run than `{}` ({what}: {} here, {} there): merge the shards of one run",
                    crate::text::clip(first.name),
                    crate::text::clip(&b),
                    crate::text::clip(&a)
                )))
            }
        };
        same("shard count", count.to_string(), r.ledger.count.to_string())?;
        same(
            "files in the list",
            first.ledger.files.to_string(),
            r.ledger.files.to_string(),
        )?;
        same(
            "digest of the list",
            first.ledger.list.clone(),
            r.ledger.list.clone(),
        )?;
        same(
            "errors about arguments",
            first.ledger.arguments.to_string(),
            r.ledger.arguments.to_string(),
        )?;
        same(
            "--fail-on",
            first.ledger.fail_on.to_string(),
            r.ledger.fail_on.to_string(),
        )?;
    }
    // Every shard once.
    let mut by_index: std::collections::BTreeMap<u64, &str> = std::collections::BTreeMap::new();
    for r in &reports {
        if r.ledger.index >= count {
            return Err(r.err(format!(
                "its ledger names shard {} of {count}: it was edited",
                r.ledger.index
            )));
        }
        if let Some(other) = by_index.insert(r.ledger.index, r.name) {
            return Err(r.err(format!(
                "is shard {}/{count} again (so is `{}`): give each shard's report once",
                r.ledger.index,
                crate::text::clip(other)
            )));
        }
    }
    if by_index.len() as u64 != count {
        let missing: Vec<String> = (0..count)
            .filter(|k| !by_index.contains_key(k))
            .take(5)
            .map(|k| format!("{k}/{count}"))
            .collect();
        let more = count - by_index.len() as u64;
        return Err(MergeError::Set(format!(
            "{more} of the {count} shards {} missing ({}{}; shards count from 0): merge needs every shard's report",
            if more == 1 { "is" } else { "are" },
            missing.join(", "),
            if more > 5 { ", …" } else { "" }
        )));
    }
    // Every file of the list in exactly one shard; a file's report in one shard.
    let files = first.ledger.files;
    let mut steps: Vec<Option<Step>> = vec![None; files];
    let mut owner: crate::FastMap<&str, usize> = crate::FastMap::default();
    for (k, r) in reports.iter().enumerate() {
        let mut last = None;
        for (
            i,
            Entry {
                position, units, ..
            },
        ) in r.ledger.entries.iter().enumerate()
        {
            let slot = steps.get_mut(*position).ok_or_else(|| {
                r.err(format!(
                    "its ledger names file {position} of a list of {files}: it was edited"
                ))
            })?;
            if slot.is_some() || last.is_some_and(|l| l >= *position) {
                return Err(r.err(format!(
                    "file {position} of the list is in two shards: the shards were not run over the same list"
                )));
            }
            last = Some(*position);
            *slot = Some(Step {
                report: k,
                entry: i,
            });
            for u in units {
                if let Some(&other) = owner.get(u.file.as_str())
                    && other != k
                {
                    return Err(r.err(format!(
                        "reports `{}`, as `{}` does: a file's report must be whole in one shard",
                        crate::text::clip(&u.file),
                        crate::text::clip(reports[other].name)
                    )));
                }
                owner.insert(&u.file, k);
            }
        }
    }
    let steps: Vec<Step> = steps.into_iter().flatten().collect();
    if steps.len() != files {
        return Err(MergeError::Set(format!(
            "the shards hold {} of the {files} files of their list: they were not run over the same list",
            steps.len()
        )));
    }
    Ok((reports, steps))
}

/// The errors of the merged run: those about arguments (from the first report), then each failed
/// file's, in the list's order; `error(report, index)` is a report's error.
fn merged_errors<T: Clone>(
    reports: &[Report<'_>],
    steps: &[Step],
    error: impl Fn(usize, usize) -> Option<T>,
) -> Result<Vec<T>, MergeError> {
    let mut out = Vec::new();
    if let Some(first) = reports.first() {
        for i in 0..first.ledger.arguments {
            out.push(
                error(0, i).ok_or_else(|| first.err("has fewer errors than its ledger says"))?,
            );
        }
    }
    for step in steps {
        let r = &reports[step.report];
        if r.ledger.entries[step.entry].outcome == Outcome::Failed {
            let at = r.error_at[step.entry];
            out.push(
                error(step.report, at)
                    .ok_or_else(|| r.err("has fewer errors than its ledger says"))?,
            );
        }
    }
    Ok(out)
}

/// Files checked in the whole run, and files skipped.
fn counted(reports: &[Report<'_>]) -> (usize, usize) {
    let entries = reports.iter().flat_map(|r| &r.ledger.entries);
    let checked = entries
        .clone()
        .filter(|e| e.outcome == Outcome::Checked)
        .count();
    let skipped = entries.filter(|e| e.outcome == Outcome::Skipped).count();
    (checked, skipped)
}

/// The severity a report writes as `text` (SARIF's levels too).
fn severity(text: &str) -> Option<Severity> {
    match text {
        "error" => Some(Severity::Error),
        "warning" => Some(Severity::Warning),
        "info" | "note" => Some(Severity::Info),
        _ => None,
    }
}
