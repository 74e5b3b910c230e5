//! SARIF 2.1.0 for GitHub code scanning: every rule in `tool.driver.rules` (id, name, short and
//! full description from the check docs, help URI), and a result per finding with its level,
//! message, physical location (no region for database rows: they have no lines — a logical
//! location names the session, message and part instead) and `partialFingerprints`.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Value, json};

use super::record::{FindingRecord, InputText};
use super::spool::Spool;
use super::{Printer, RunSummary, UnitOutput};
use crate::checks::Rule;
use crate::checks::diagnostic::Severity;

/// The artifact of a finding without a file.
static NO_FILE: InputText = InputText::empty();

/// Where rule documentation lives: `{base}{rule}` (configurable; see `rewind check --help`).
pub const DEFAULT_HELP_URI_BASE: &str = "urn:rewind:rule:";

/// Writes the document at the end (its invocations need the whole run); the results are written
/// as their units come, into a [`Spool`], and copied into place.
pub struct SarifPrinter<W: Write> {
    out: W,
    results: Spool,
    written: usize,
    help_uri_base: String,
}

impl<W: Write> SarifPrinter<W> {
    pub fn new(out: W, help_uri_base: Option<String>) -> Self {
        Self {
            out,
            results: Spool::new(),
            written: 0,
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

/// One result, borrowed from its record and written as it is serialized: building a
/// `serde_json::Value` per result held a tree of maps per finding until the end of the run
/// (8 KiB a finding; the records themselves are kept anyway, for the document is written last).
/// Members are declared in the order they are written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: Rule,
    rule_index: usize,
    level: &'static str,
    message: Text,
    locations: [Location<'a>; 1],
    partial_fingerprints: Fingerprints<'a>,
}

#[derive(Serialize)]
struct Text {
    text: InputText,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location<'a> {
    physical_location: Physical<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logical_locations: Option<[Logical; 1]>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Physical<'a> {
    artifact_location: Artifact<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Artifact<'a> {
    uri: &'a InputText,
    uri_base_id: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u64,
    start_column: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_column: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    byte_offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    byte_length: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Logical {
    fully_qualified_name: InputText,
    kind: &'static str,
}

#[derive(Serialize)]
struct Fingerprints<'a> {
    #[serde(rename = "rewindFinding/v1")]
    v1: &'a str,
}

fn result(rec: &FindingRecord) -> SarifResult<'_> {
    let index = Rule::ALL.iter().position(|&r| r == rec.rule).unwrap_or(0);
    let region = match (rec.line, rec.column) {
        (Some(line), Some(col)) => {
            let (end_line, end_column) = match (rec.end_line, rec.end_column) {
                (Some(el), Some(ec)) => (Some(el), Some(ec.max(if el == line { col } else { 1 }))),
                _ => (None, None),
            };
            Some(Region {
                start_line: line,
                start_column: col,
                end_line,
                end_column,
                byte_offset: rec.span.map(|s| s.offset),
                byte_length: rec.span.map(|s| s.length),
            })
        }
        _ => None,
    };
    let ids = &rec.ids;
    let path: Vec<&str> = [&ids.session_id, &ids.message_id, &ids.part_id]
        .iter()
        .filter_map(|i| i.as_ref().map(InputText::unescaped))
        .collect();
    let logical_locations = (!path.is_empty()).then(|| {
        [Logical {
            fully_qualified_name: InputText::new(path.join("/")),
            kind: "object",
        }]
    });
    let text = match &rec.locator {
        Some(locator) => InputText::new(format!(
            "{} ({})",
            rec.message.unescaped(),
            locator.unescaped()
        )),
        None => rec.message.clone(),
    };
    SarifResult {
        rule_id: rec.rule,
        rule_index: index,
        level: level(rec.severity),
        message: Text { text },
        locations: [Location {
            physical_location: Physical {
                artifact_location: Artifact {
                    uri: rec.file.as_ref().unwrap_or(&NO_FILE),
                    uri_base_id: "%SRCROOT%",
                },
                region,
            },
            logical_locations,
        }],
        partial_fingerprints: Fingerprints {
            v1: &rec.fingerprint,
        },
    }
}

/// The document, in the order its members are written; the results are built one at a time.
#[derive(Serialize)]
struct Document<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Value,
    invocations: Value,
    column_kind: &'static str,
    results: Results<'a>,
    /// `check --shard`'s ledger, for `rewind merge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<Properties>,
}

#[derive(Serialize)]
struct Properties {
    shard: super::ledger::Ledger,
}

/// Where the results go in the document written without them: the run's `results` member,
/// after its `columnKind` and before a shard's `properties`. Only the document's own members
/// have these unescaped quotes (a string's quotes are `\"`), so it is found once.
const RESULTS: &[u8] = b"\"columnKind\":\"unicodeCodePoints\",\"results\":[]";

/// The results, each built from its record as it is written.
struct Results<'a>(&'a [FindingRecord]);

impl Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(result))
    }
}

impl<W: Write> Printer for SarifPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        for rec in &unit.records {
            if self.written > 0 {
                self.results.write_all(b",")?;
            }
            super::safe_json::to_writer(&mut self.results, &result(rec))?;
            self.written += 1;
        }
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
        let doc = Document {
            schema: "https://json.schemastore.org/sarif-2.1.0.json",
            version: "2.1.0",
            runs: [Run {
                tool: json!({"driver": {
                    "name": "rewind",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules(&self.help_uri_base),
                }}),
                invocations: json!([{
                    "executionSuccessful": run.errors.is_empty(),
                    "toolExecutionNotifications": notifications,
                }]),
                column_kind: "unicodeCodePoints",
                results: Results(&[]),
                properties: run.shard.as_ref().map(|l| Properties {
                    shard: super::ledger::Ledger {
                        format: "sarif".to_owned(),
                        ..l.clone()
                    },
                }),
            }],
        };
        // Compact: SARIF uploads are size-limited. Written without results, which then go
        // into their place in the only run.
        let mut rest = Vec::new();
        super::safe_json::to_writer(&mut rest, &doc)?;
        let at = memchr::memmem::find(&rest, RESULTS)
            .map(|i| i + RESULTS.len() - 1)
            .ok_or_else(|| io::Error::other("the SARIF document has no results member"))?;
        self.out.write_all(&rest[..at])?;
        self.results.copy_to(&mut self.out)?;
        self.out.write_all(&rest[at..])?;
        writeln!(self.out)?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: Option<(u64, u64)>, end: Option<(u64, u64)>, ids: bool) -> FindingRecord {
        let mut r = FindingRecord {
            rule: Rule::StepUnclosed,
            severity: Severity::Warning,
            message: "a step never finished".into(),
            file: Some("log.txt".into()),
            locator: None,
            line: line.map(|l| l.0),
            column: line.map(|l| l.1),
            end_line: end.map(|e| e.0),
            end_column: end.map(|e| e.1),
            span: Some(super::super::record::SpanRecord {
                offset: 10,
                length: 3,
            }),
            label: None,
            ids: Default::default(),
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
            fingerprint: "abc".into(),
        };
        if ids {
            r.ids = super::super::record::IdsRecord::from(
                &crate::checks::diagnostic::Ids::default()
                    .session("ses_1")
                    .message("msg_2"),
            );
            r.locator = Some("message msg_2".into());
        }
        r
    }

    #[test]
    fn results_have_the_members_sarif_names_in_order() {
        let index = Rule::ALL
            .iter()
            .position(|&r| r == Rule::StepUnclosed)
            .unwrap();
        let physical = |region: Option<Value>| {
            let mut p = json!({"artifactLocation": {"uri": "log.txt", "uriBaseId": "%SRCROOT%"}});
            if let Some(r) = region {
                p["region"] = r;
            }
            p
        };
        let expect = |location: Value, text: &str| {
            json!({
                "ruleId": "step-unclosed",
                "ruleIndex": index,
                "level": "warning",
                "message": {"text": text},
                "locations": [location],
                "partialFingerprints": {"rewindFinding/v1": "abc"},
            })
        };
        let cases = [
            (
                record(Some((3, 5)), Some((3, 2)), false),
                expect(
                    json!({"physicalLocation": physical(Some(json!({"startLine": 3, "startColumn": 5,
                        "endLine": 3, "endColumn": 5, "byteOffset": 10, "byteLength": 3})))}),
                    "a step never finished",
                ),
            ),
            (
                record(Some((3, 5)), Some((4, 0)), false),
                expect(
                    json!({"physicalLocation": physical(Some(json!({"startLine": 3, "startColumn": 5,
                        "endLine": 4, "endColumn": 1, "byteOffset": 10, "byteLength": 3})))}),
                    "a step never finished",
                ),
            ),
            (
                record(Some((3, 5)), None, false),
                expect(
                    json!({"physicalLocation": physical(Some(json!({"startLine": 3, "startColumn": 5,
                        "byteOffset": 10, "byteLength": 3})))}),
                    "a step never finished",
                ),
            ),
            (
                record(None, None, true),
                expect(
                    json!({"physicalLocation": physical(None), "logicalLocations":
                        [{"fullyQualifiedName": "ses_1/msg_2", "kind": "object"}]}),
                    "a step never finished (message msg_2)",
                ),
            ),
        ];
        for (rec, want) in cases {
            // Compared as text: the members' order is part of the output.
            let got = serde_json::to_string(&result(&rec)).unwrap();
            assert_eq!(got, serde_json::to_string(&want).unwrap());
        }
    }

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
