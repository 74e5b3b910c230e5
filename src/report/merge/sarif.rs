//! Merging SARIF logs into one run: the tool (its rules) as every shard wrote it, the results in
//! the run's order, the notifications of the errors, and whether the run succeeded.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Kind, MergeError, Merged, merged_errors, plan, severity};
use crate::report::Totals;

pub(super) fn merge(
    inputs: &[(String, Vec<u8>)],
    baseline: Option<&HashSet<String>>,
) -> Result<Merged, MergeError> {
    let mut docs: Vec<(Map<String, Value>, Map<String, Value>)> = Vec::new();
    let mut ledgers = Vec::new();
    for (name, bytes) in inputs {
        let err = |message: String| MergeError::Input {
            input: name.clone(),
            message,
        };
        let mut doc = super::object_of(name, bytes, "a SARIF log")?;
        let run = match doc.remove("runs") {
            Some(Value::Array(runs)) if runs.len() == 1 => runs.into_iter().next(),
            _ => None,
        };
        let Some(Value::Object(mut run)) = run else {
            return Err(err("not a `rewind check` SARIF log (one run)".to_owned()));
        };
        let ledger = run
            .remove("properties")
            .and_then(|mut p| p.get_mut("shard").map(Value::take))
            .ok_or_else(|| super::no_ledger(name))?;
        ledgers.push((name.as_str(), super::ledger_of(name, ledger)?));
        docs.push((doc, run));
    }
    let (reports, steps) = plan(Kind::Sarif, ledgers)?;
    let tool = docs[0].1.get("tool").cloned().unwrap_or_default();
    let mut results = Vec::new();
    let mut notes = Vec::new();
    for ((r, (_, run)), (name, _)) in reports.iter().zip(&mut docs).zip(inputs) {
        if run.get("tool") != Some(&tool) {
            return Err(MergeError::Input {
                input: name.clone(),
                message: format!(
                    "describes its rules otherwise than `{}` does (another `help-uri-base` or rewind): merge the shards of one run",
                    crate::text::clip(&inputs[0].0)
                ),
            });
        }
        let found = match run.get_mut("results").map(Value::take) {
            Some(Value::Array(found)) => found,
            _ => Vec::new(),
        };
        let notifications = run
            .get_mut("invocations")
            .and_then(|i| i.get_mut(0))
            .and_then(|i| i.get_mut("toolExecutionNotifications"))
            .map(Value::take);
        let notifications = match notifications {
            Some(Value::Array(n)) => n,
            _ => Vec::new(),
        };
        if found.len() != r.findings() || notifications.len() != r.errors() {
            return Err(
                r.err("holds other results or notifications than its ledger says: it was edited")
            );
        }
        results.push(found);
        notes.push(notifications);
    }
    let mut kept = Vec::new();
    let mut totals = Totals::default();
    for step in &steps {
        let r = &reports[step.report];
        let first = r.findings_at[step.entry];
        let n: usize = r.ledger.entries[step.entry]
            .units
            .iter()
            .map(|u| u.findings)
            .sum();
        for result in results[step.report].iter_mut().skip(first).take(n) {
            let result = result.take();
            let print = result
                .pointer("/partialFingerprints/rewindFinding~1v1")
                .and_then(Value::as_str);
            if baseline.is_some_and(|b| print.is_some_and(|p| b.contains(p))) {
                continue;
            }
            totals.count(
                result
                    .get("level")
                    .and_then(Value::as_str)
                    .and_then(severity)
                    .ok_or_else(|| r.err("has a result without a level: it was edited"))?,
            );
            kept.push(result);
        }
    }
    let errors = merged_errors(&reports, &steps, |k, i| notes[k].get(i).cloned())?;
    let messages = errors
        .iter()
        .map(|e| {
            let text = |k: &str| {
                e.pointer(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (
                text("/locations/0/physicalLocation/artifactLocation/uri"),
                text("/message/text"),
            )
        })
        .collect();

    // The log, its members in the printer's order.
    let (head, first_run) = &docs[0];
    let mut run = Map::new();
    run.insert("tool".to_owned(), tool.clone());
    run.insert(
        "invocations".to_owned(),
        serde_json::json!([{
            "executionSuccessful": errors.is_empty(),
            "toolExecutionNotifications": errors,
        }]),
    );
    if let Some(kind) = first_run.get("columnKind") {
        run.insert("columnKind".to_owned(), kind.clone());
    }
    run.insert("results".to_owned(), Value::Array(kept));
    let mut doc = Map::new();
    for key in ["$schema", "version"] {
        if let Some(v) = head.get(key) {
            doc.insert(key.to_owned(), v.clone());
        }
    }
    doc.insert("runs".to_owned(), Value::Array(vec![Value::Object(run)]));
    let mut bytes = Vec::new();
    crate::report::safe_json::to_writer(&mut bytes, &doc)
        .map_err(|e| MergeError::Set(e.to_string()))?;
    bytes.push(b'\n');
    Ok(Merged::of(bytes, totals, messages, &reports))
}
