//! Merging JSON documents: file entries in the order the run's list first names them, the findings
//! of each file where its units wrote them, the errors, the summary counted again. A baselined
//! finding leaves its session's counts as `check --baseline` leaves them.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Kind, MergeError, Merged, Report, merged_errors, plan, severity};
use crate::report::Totals;

fn take(doc: &mut Map<String, Value>, key: &str) -> Option<Vec<Value>> {
    match doc.remove(key) {
        Some(Value::Array(items)) => Some(items),
        _ => None,
    }
}

pub(super) fn merge(
    inputs: &[(String, Vec<u8>)],
    baseline: Option<&HashSet<String>>,
) -> Result<Merged, MergeError> {
    let mut docs = Vec::new();
    let mut ledgers = Vec::new();
    for (name, bytes) in inputs {
        let err = |message: String| MergeError::Input {
            input: name.clone(),
            message,
        };
        let mut doc = super::object_of(name, bytes, "a JSON report")?;
        let ledger = doc.remove("shard").ok_or_else(|| super::no_ledger(name))?;
        ledgers.push((name.as_str(), super::ledger_of(name, ledger)?));
        let files = take(&mut doc, "files");
        let findings = take(&mut doc, "findings");
        let errors = take(&mut doc, "errors");
        let (Some(files), Some(findings), Some(errors)) = (files, findings, errors) else {
            return Err(err(
                "not a `rewind check` JSON report (no `files`, `findings` or `errors`)".to_owned(),
            ));
        };
        docs.push((doc, files, findings, errors));
    }
    let (reports, steps) = plan(Kind::Json, ledgers)?;
    for (r, (_, _, findings, errors)) in reports.iter().zip(&docs) {
        if findings.len() != r.findings() || errors.len() != r.errors() {
            return Err(r.err("holds other findings or errors than its ledger says: it was edited"));
        }
    }
    // Each report's file entries by path.
    let mut entries: Vec<crate::FastMap<String, Value>> = Vec::new();
    for (_, files, _, _) in &mut docs {
        let mut by_path = crate::FastMap::default();
        for entry in files.drain(..) {
            let path = entry
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            by_path.insert(path, entry);
        }
        entries.push(by_path);
    }

    let mut files: Vec<Value> = Vec::new();
    let mut file_index: crate::FastMap<String, (usize, usize)> = crate::FastMap::default();
    let mut findings: Vec<Value> = Vec::new();
    let mut totals = Totals::default();
    for step in &steps {
        let r: &Report<'_> = &reports[step.report];
        let entry = &r.ledger.entries[step.entry];
        let mut at = r.findings_at[step.entry];
        for unit in &entry.units {
            // The unit's sessions: the next `unit.sessions` of its file's entry.
            let (k, first_session) = match file_index.get(&unit.file) {
                Some(&(k, next)) => (k, next),
                None => {
                    let e = entries[step.report].remove(&unit.file).ok_or_else(|| {
                        r.err(format!(
                            "has no file entry for `{}`, which its ledger names: it was edited",
                            crate::text::clip(&unit.file)
                        ))
                    })?;
                    files.push(e);
                    (files.len() - 1, 0)
                }
            };
            file_index.insert(unit.file.clone(), (k, first_session + unit.sessions));
            let source = &mut docs[step.report].2;
            for finding in source.iter_mut().skip(at).take(unit.findings) {
                let finding = std::mem::take(finding);
                let sev = finding
                    .get("severity")
                    .and_then(Value::as_str)
                    .and_then(severity)
                    .ok_or_else(|| r.err("has a finding without a severity: it was edited"))?;
                let dropped = baseline.is_some_and(|b| {
                    finding
                        .get("fingerprint")
                        .and_then(Value::as_str)
                        .is_some_and(|f| b.contains(f))
                });
                if dropped {
                    // As `check --baseline`: the finding's session no longer counts it.
                    if let Some(id) = finding.get("session_id").and_then(Value::as_str)
                        && let Some(sessions) =
                            files[k].get_mut("sessions").and_then(Value::as_array_mut)
                    {
                        let key = match sev {
                            crate::checks::diagnostic::Severity::Error => "errors",
                            crate::checks::diagnostic::Severity::Warning => "warnings",
                            crate::checks::diagnostic::Severity::Info => "infos",
                        };
                        for s in sessions
                            .iter_mut()
                            .skip(first_session)
                            .take(unit.sessions)
                            .filter(|s| s.get("id").and_then(Value::as_str) == Some(id))
                        {
                            if let Some(n) = s.get_mut(key)
                                && let Some(v) = n.as_u64()
                            {
                                *n = Value::from(v.saturating_sub(1));
                            }
                        }
                    }
                    continue;
                }
                totals.count(sev);
                findings.push(finding);
            }
            at += unit.findings;
        }
    }
    let errors = merged_errors(&reports, &steps, |k, i| docs[k].3.get(i).cloned())?;
    let messages = errors
        .iter()
        .map(|e| {
            let text = |k: &str| {
                e.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (text("file"), text("error"))
        })
        .collect();

    // The document, its members in the printer's order.
    let head = &docs[0].0;
    let mut doc = Map::new();
    for key in ["version", "tool"] {
        if let Some(v) = head.get(key) {
            doc.insert(key.to_owned(), v.clone());
        }
    }
    doc.insert("files".to_owned(), Value::Array(files));
    doc.insert("findings".to_owned(), Value::Array(findings));
    doc.insert("errors".to_owned(), Value::Array(errors));
    doc.insert(
        "summary".to_owned(),
        serde_json::to_value(totals).map_err(|e| MergeError::Set(e.to_string()))?,
    );
    let mut bytes = Vec::new();
    crate::report::safe_json::to_writer_pretty(&mut bytes, &doc)
        .map_err(|e| MergeError::Set(e.to_string()))?;
    bytes.push(b'\n');
    Ok(Merged::of(bytes, totals, messages, &reports))
}
