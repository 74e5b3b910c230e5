//! Merging JSON Lines: each finding's line as its shard wrote it, in the run's order, then the
//! error lines, then the summary line counted again.

use std::collections::HashSet;

use serde::Deserialize;

use super::{Kind, MergeError, Merged, counted, merged_errors, plan, severity};
use crate::report::Totals;

/// What the merge reads of a finding's line.
#[derive(Deserialize)]
struct Seen {
    severity: String,
    fingerprint: String,
}

pub(super) fn merge(
    inputs: &[(String, Vec<u8>)],
    baseline: Option<&HashSet<String>>,
) -> Result<Merged, MergeError> {
    let mut split = Vec::new();
    let mut ledgers = Vec::new();
    for (name, bytes) in inputs {
        let err = |message: &str| MergeError::Input {
            input: name.clone(),
            message: message.to_owned(),
        };
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let Some(last) = lines.pop() else {
            return Err(super::no_ledger(name));
        };
        let mut ledger: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(last).map_err(|_| super::no_ledger(name))?;
        let ledger = ledger
            .remove("shard")
            .ok_or_else(|| super::no_ledger(name))?;
        let ledger = super::ledger_of(name, ledger)?;
        // The summary line, which the merge writes again.
        if lines.pop().is_none() {
            return Err(err("has no summary line: it was cut short"));
        }
        ledgers.push((name.as_str(), ledger));
        split.push(lines);
    }
    let (reports, steps) = plan(Kind::Jsonl, ledgers)?;
    for (r, lines) in reports.iter().zip(&split) {
        if lines.len() != r.findings() + r.errors() {
            return Err(r.err("holds other findings or errors than its ledger says: it was edited"));
        }
    }
    let mut out = Vec::new();
    let mut totals = Totals::default();
    for step in &steps {
        let r = &reports[step.report];
        let entry = &r.ledger.entries[step.entry];
        let first = r.findings_at[step.entry];
        let n: usize = entry.units.iter().map(|u| u.findings).sum();
        for line in &split[step.report][first..first + n] {
            let finding: serde_json::Value = serde_json::from_slice(line)
                .map_err(|_| r.err("has a finding line that is not one: it was edited"))?;
            let seen = Seen::deserialize(&finding)
                .map_err(|_| r.err("has a finding line that is not one: it was edited"))?;
            if baseline.is_some_and(|b| b.contains(&seen.fingerprint)) {
                continue;
            }
            totals.count(
                severity(&seen.severity)
                    .ok_or_else(|| r.err("has a finding without a severity: it was edited"))?,
            );
            // Written again as the printer writes it (the same bytes for a line rewind wrote),
            // so that a line edited to carry a raw control character does not pass it on.
            crate::report::safe_json::to_writer(&mut out, &finding)
                .map_err(|e| MergeError::Set(e.to_string()))?;
            out.push(b'\n');
        }
    }
    let errors = merged_errors(&reports, &steps, |k, i| {
        split[k].get(reports[k].findings() + i).copied()
    })?;
    let mut messages = Vec::new();
    for line in &errors {
        let v: serde_json::Value = serde_json::from_slice(line).map_err(|_| {
            MergeError::Set("an error line of a report is not JSON: it was edited".to_owned())
        })?;
        crate::report::safe_json::to_writer(&mut out, &v)
            .map_err(|e| MergeError::Set(e.to_string()))?;
        out.push(b'\n');
        let text = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        messages.push((text("file"), text("error")));
    }
    let (checked, skipped) = counted(&reports);
    let summary = crate::report::jsonl::summary(&totals, checked, skipped, errors.len());
    crate::report::safe_json::to_writer(&mut out, &summary)
        .map_err(|e| MergeError::Set(e.to_string()))?;
    out.push(b'\n');
    Ok(Merged {
        bytes: out,
        totals,
        errors: messages,
        arguments: reports[0].ledger.arguments,
        fail_on: reports[0].ledger.fail_on,
        checked,
    })
}
