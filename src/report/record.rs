//! Findings resolved for machine output: positions computed, ids flattened, and a stable
//! fingerprint. Every machine format (JSON, JSON Lines, SARIF, GitHub, JUnit) and baselines are
//! built from these records. Every text in a record that comes from the input (messages quote
//! it; ids and file names are it) is an [`InputText`], which a printer can only write escaped.

use std::io::{Read, Seek, SeekFrom};

use serde::Serialize;

use super::Located;
pub use super::input_text::InputText;
use crate::checks::Rule;
use crate::checks::diagnostic::{Finding, Ids, Label, Severity};
use crate::source::{SourceKind, SourceMap, Span};

/// A byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SpanRecord {
    pub offset: u64,
    pub length: u64,
}

/// A place: the file, and either line/column (files) or a locator (rows rendered by rewind).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LabelRecord {
    pub message: InputText,
    pub file: InputText,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locator: Option<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u64>,
    pub span: SpanRecord,
}

/// A finding ready for machine output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindingRecord {
    pub rule: Rule,
    pub severity: Severity,
    pub message: InputText,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locator: Option<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<SpanRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<InputText>,
    #[serde(flatten)]
    pub ids: IdsRecord,
    pub related: Vec<LabelRecord>,
    pub notes: Vec<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<InputText>,
    /// Stable across runs and unrelated edits of the input (see [`fingerprints`]).
    pub fingerprint: String,
}

/// The session, message, part and tool-call ids of a record (see [`Ids`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IdsRecord {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_id: Option<InputText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<InputText>,
}

impl From<&Ids> for IdsRecord {
    fn from(ids: &Ids) -> Self {
        let text = |id: &Option<String>| id.as_deref().map(InputText::from);
        Self {
            session_id: text(&ids.session_id),
            message_id: text(&ids.message_id),
            part_id: text(&ids.part_id),
            call_id: text(&ids.call_id),
        }
    }
}

impl IdsRecord {
    /// The ids that are set, session first.
    pub fn present(&self) -> impl Iterator<Item = &InputText> {
        [
            &self.session_id,
            &self.message_id,
            &self.part_id,
            &self.call_id,
        ]
        .into_iter()
        .flatten()
    }
}

/// A path as shown in machine output: relative to the working directory when it is under it,
/// with `/` separators and no leading `./`.
pub fn display_path(path: &std::path::Path) -> String {
    let rel = std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(&cwd).ok().map(|p| p.to_path_buf()))
        .unwrap_or_else(|| path.to_path_buf());
    let s = rel.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_owned).unwrap_or(s)
}

fn label_record(sources: &SourceMap, located: &Located, label: &Label) -> LabelRecord {
    let mut rec = LabelRecord {
        message: InputText::from(&label.text),
        file: InputText::default(),
        locator: None,
        line: None,
        column: None,
        end_line: None,
        end_column: None,
        span: SpanRecord {
            offset: label.span.offset,
            length: label.span.len,
        },
    };
    if let Some(source) = sources.get(label.span.file) {
        rec.file = display_path(&source.path).into();
        match &source.kind {
            // Rows rendered by rewind: no line numbers of a file that does not have them.
            SourceKind::Virtual { locator, .. } => rec.locator = Some(locator.into()),
            SourceKind::File => {
                if let Some(r) = located.get(&label.span) {
                    rec.line = Some(r.start.line);
                    rec.column = Some(r.start.column);
                    rec.end_line = Some(r.end.line);
                    rec.end_column = Some(r.end.column);
                }
            }
        }
    }
    rec
}

/// Records for `findings` (in order), with fingerprints.
pub fn records(sources: &SourceMap, located: &Located, findings: &[Finding]) -> Vec<FindingRecord> {
    let mut out: Vec<FindingRecord> = findings
        .iter()
        .map(|f| {
            let at = f
                .primary
                .as_ref()
                .map(|p| label_record(sources, located, p));
            FindingRecord {
                rule: f.rule,
                severity: f.severity,
                message: InputText::from(&f.message),
                file: at.as_ref().map(|a| a.file.clone()),
                locator: at.as_ref().and_then(|a| a.locator.clone()),
                line: at.as_ref().and_then(|a| a.line),
                column: at.as_ref().and_then(|a| a.column),
                end_line: at.as_ref().and_then(|a| a.end_line),
                end_column: at.as_ref().and_then(|a| a.end_column),
                span: at.as_ref().map(|a| a.span),
                label: f.primary.as_ref().map(|p| InputText::from(&p.text)),
                ids: IdsRecord::from(&f.ids),
                related: f
                    .related
                    .iter()
                    .map(|l| label_record(sources, located, l))
                    .collect(),
                notes: f.notes.iter().map(InputText::from).collect(),
                help: f.help.as_ref().map(InputText::from),
                fingerprint: String::new(),
            }
        })
        .collect();
    let prints = fingerprints(sources, findings);
    for (rec, fp) in out.iter_mut().zip(prints) {
        rec.fingerprint = fp;
    }
    out
}

/// FNV-1a, 64 bits: a stable hash (std's hasher is not stable across releases).
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The bytes a span covers (at most 4 KiB), read from the source.
fn span_bytes(sources: &SourceMap, span: &Span) -> Vec<u8> {
    let Some(source) = sources.get(span.file) else {
        return Vec::new();
    };
    let len = span.len.min(4096) as usize;
    match &source.kind {
        SourceKind::Virtual { text, .. } => text
            .as_bytes()
            .get(span.offset as usize..span.offset as usize + len)
            .map(<[u8]>::to_vec)
            .unwrap_or_default(),
        SourceKind::File => {
            let mut buf = vec![0; len];
            let read = crate::ingest::input::readable(&source.path)
                .map_err(std::io::Error::other)
                .and_then(std::fs::File::open)
                .and_then(|mut f| {
                    f.seek(SeekFrom::Start(span.offset))?;
                    f.read_exact(&mut buf)
                });
            if read.is_ok() { buf } else { Vec::new() }
        }
    }
}

/// Stable fingerprints: the rule and the session/message/part/call ids when the finding has them,
/// otherwise the rule, the file and the bytes the finding points at (plus an occurrence number
/// for identical ones). No line numbers: a fingerprint survives edits elsewhere in the file.
pub fn fingerprints(sources: &SourceMap, findings: &[Finding]) -> Vec<String> {
    // How many findings before have each base: the occurrence number, in one lookup.
    let mut seen: crate::FastMap<u64, usize> = crate::FastMap::default();
    findings
        .iter()
        .map(|f| {
            let ids = &f.ids;
            let id = |o: &Option<String>| o.clone().unwrap_or_default();
            let has_ids =
                ids.part_id.is_some() || ids.message_id.is_some() || ids.call_id.is_some();
            let base = if has_ids {
                fnv(&[
                    f.rule.as_str().as_bytes(),
                    id(&ids.session_id).as_bytes(),
                    id(&ids.message_id).as_bytes(),
                    id(&ids.part_id).as_bytes(),
                    id(&ids.call_id).as_bytes(),
                ])
            } else {
                let content = f
                    .primary
                    .as_ref()
                    .map(|p| span_bytes(sources, &p.span))
                    .unwrap_or_default();
                let file = f
                    .primary
                    .as_ref()
                    .and_then(|p| sources.get(p.span.file))
                    .map(|s| display_path(&s.path))
                    .unwrap_or_default();
                fnv(&[
                    f.rule.as_str().as_bytes(),
                    id(&ids.session_id).as_bytes(),
                    file.as_bytes(),
                    &content,
                ])
            };
            let count = seen.entry(base).or_insert(0);
            let n = *count;
            *count += 1;
            format!("{:016x}", fnv(&[&base.to_le_bytes(), &n.to_le_bytes()]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_stable() {
        // Pinned: a changed value would invalidate every baseline users have written.
        assert_eq!(fnv(&[b"rule", b"id"]), 0x922f_632b_1fcd_db22);
        assert_ne!(fnv(&[b"ab", b"c"]), fnv(&[b"a", b"bc"]));
    }

    #[test]
    fn identical_findings_are_numbered_by_occurrence() {
        use crate::checks::Rule;
        use crate::checks::diagnostic::{Finding, Ids, Severity};
        let finding = |part: &str| {
            Finding::new(Rule::StepUnclosed, Severity::Error, "m").ids(Ids {
                session_id: Some("ses_1".into()),
                part_id: Some(part.into()),
                ..Ids::default()
            })
        };
        let findings = [
            finding("prt_a"),
            finding("prt_b"),
            finding("prt_a"),
            finding("prt_a"),
        ];
        let prints = fingerprints(&SourceMap::new(), &findings);
        let base = fnv(&[b"step-unclosed", b"ses_1", b"", b"prt_a", b""]);
        let nth = |n: usize| format!("{:016x}", fnv(&[&base.to_le_bytes(), &n.to_le_bytes()]));
        assert_eq!(
            [&prints[0], &prints[2], &prints[3]],
            [&nth(0), &nth(1), &nth(2)]
        );
        assert_ne!(prints[1], prints[0]);
        // Pinned: a changed value would invalidate every baseline users have written.
        assert_eq!(prints[0], "a29b82ec7f92889e");
    }

    #[test]
    fn paths_are_relative_and_slashed() {
        assert_eq!(display_path(std::path::Path::new("./a/b.log")), "a/b.log");
        let cwd = std::env::current_dir().unwrap_or_default();
        assert_eq!(display_path(&cwd.join("x/y.sse")), "x/y.sse");
    }
}
