//! SARIF 2.1.0 for GitHub code scanning: every rule in `tool.driver.rules` (id, name, short and
//! full description from the check docs, help URI), and a result per finding with its level,
//! message, physical location (no region for database rows: they have no lines — a logical
//! location names the session, message and part instead) and `partialFingerprints`.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::record::FindingRecord;
use super::{Printer, RunSummary, UnitOutput};
use crate::checks::Rule;
use crate::diagnostic::Severity;

/// Where rule documentation lives: `{base}{rule}` (configurable; see `rewind check --help`).
pub const DEFAULT_HELP_URI_BASE: &str = "urn:rewind:rule:";

pub struct SarifPrinter<W: Write> {
    out: W,
    results: Vec<Value>,
    help_uri_base: String,
}

impl<W: Write> SarifPrinter<W> {
    pub fn new(out: W, help_uri_base: Option<String>) -> Self {
        Self {
            out,
            results: Vec::new(),
            help_uri_base: help_uri_base.unwrap_or_else(|| DEFAULT_HELP_URI_BASE.to_owned()),
        }
    }
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn rules(base: &str) -> Vec<Value> {
    Rule::ALL
        .iter()
        .map(|rule| {
            let m = rule.meta();
            let what = m
                .section("What it does")
                .unwrap_or_else(|| m.summary.to_owned());
            json!({
                "id": m.name,
                "name": format!("{rule:?}"),
                "shortDescription": {"text": m.summary},
                "fullDescription": {"text": what},
                "help": {"text": m.doc_markdown(), "markdown": m.doc_markdown()},
                "helpUri": format!("{base}{}", m.name),
                "defaultConfiguration": {"level": level(m.severity)},
            })
        })
        .collect()
}

fn result(rec: &FindingRecord) -> Value {
    let index = Rule::ALL.iter().position(|&r| r == rec.rule).unwrap_or(0);
    let mut physical = json!({
        "artifactLocation": {"uri": rec.file.clone().unwrap_or_default(), "uriBaseId": "%SRCROOT%"},
    });
    if let (Some(line), Some(col)) = (rec.line, rec.column) {
        let mut region = json!({"startLine": line, "startColumn": col});
        if let (Some(el), Some(ec)) = (rec.end_line, rec.end_column) {
            region["endLine"] = json!(el);
            region["endColumn"] = json!(ec.max(if el == line { col } else { 1 }));
        }
        if let Some(span) = rec.span {
            region["byteOffset"] = json!(span.offset);
            region["byteLength"] = json!(span.length);
        }
        physical["region"] = region;
    }
    let mut location = json!({"physicalLocation": physical});
    let ids = &rec.ids;
    let path: Vec<&str> = [&ids.session_id, &ids.message_id, &ids.part_id]
        .iter()
        .filter_map(|i| i.as_deref())
        .collect();
    if !path.is_empty() {
        location["logicalLocations"] =
            json!([{"fullyQualifiedName": path.join("/"), "kind": "object"}]);
    }
    let mut text = rec.message.clone();
    if let Some(locator) = &rec.locator {
        text.push_str(&format!(" ({locator})"));
    }
    json!({
        "ruleId": rec.rule,
        "ruleIndex": index,
        "level": level(rec.severity),
        "message": {"text": text},
        "locations": [location],
        "partialFingerprints": {"rewindFinding/v1": rec.fingerprint},
    })
}

impl<W: Write> Printer for SarifPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        self.results.extend(unit.records.iter().map(result));
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        let notifications: Vec<Value> = run
            .errors
            .iter()
            .map(|(file, error)| {
                json!({
                    "level": "error",
                    "message": {"text": error},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}}}],
                })
            })
            .collect();
        let doc = json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "rewind",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules(&self.help_uri_base),
                }},
                "invocations": [{
                    "executionSuccessful": run.errors.is_empty(),
                    "toolExecutionNotifications": notifications,
                }],
                "columnKind": "unicodeCodePoints",
                "results": self.results,
            }],
        });
        // Compact: SARIF uploads are size-limited.
        serde_json::to_writer(&mut self.out, &doc)?;
        writeln!(self.out)?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_pascal_case() {
        let names: Vec<String> = rules("urn:")
            .iter()
            .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(names.iter().any(|n| n == "ToolErrorDropped"));
        assert!(names.iter().any(|n| n == "SseInvalidJson"));
    }
}
