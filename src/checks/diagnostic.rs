//! Findings: what checks produce and printers render.
//!
//! A finding owns its message and spans, never the text they point at; printers read the source
//! lazily (see `report::snippet`).

use std::fmt;

use serde::Serialize;

use super::Rule;
use crate::source::Span;
use crate::text::InputText;

/// How serious a finding is. Ordered: `Info < Warning < Error`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// A span with words attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub text: InputText,
}

/// The session, message, part and tool-call ids a finding is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ids {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl Ids {
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }
    pub fn message(mut self, id: impl Into<String>) -> Self {
        self.message_id = Some(id.into());
        self
    }
    pub fn part(mut self, id: impl Into<String>) -> Self {
        self.part_id = Some(id.into());
        self
    }
    pub fn call(mut self, id: impl Into<String>) -> Self {
        self.call_id = Some(id.into());
        self
    }
}

/// One diagnosis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule (its kebab-case name is a stable contract).
    pub rule: Rule,
    pub severity: Severity,
    /// Worded by the check, quoting the input: printed only through an escaping.
    pub message: InputText,
    /// Where the problem is.
    pub primary: Option<Label>,
    /// Related places ("tool started here", "session died here").
    pub related: Vec<Label>,
    /// Further lines of explanation, shown under the snippet.
    pub notes: Vec<InputText>,
    pub help: Option<InputText>,
    pub ids: Ids,
}

impl Finding {
    pub fn new(rule: Rule, severity: Severity, message: impl Into<InputText>) -> Self {
        Self {
            rule,
            severity,
            message: message.into(),
            primary: None,
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
            ids: Ids::default(),
        }
    }

    pub fn at(mut self, span: Span, text: impl Into<InputText>) -> Self {
        self.primary = Some(Label {
            span,
            text: text.into(),
        });
        self
    }

    pub fn also(mut self, span: Option<Span>, text: impl Into<InputText>) -> Self {
        if let Some(span) = span {
            self.related.push(Label {
                span,
                text: text.into(),
            });
        }
        self
    }

    pub fn note(mut self, note: impl Into<InputText>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn help(mut self, help: impl Into<InputText>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn ids(mut self, ids: Ids) -> Self {
        self.ids = ids;
        self
    }

    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// Sort key: by position of the primary span, then rule.
    pub fn sort_key(&self) -> (u32, u64, &'static str) {
        match &self.primary {
            Some(l) => (l.span.file.0, l.span.offset, self.rule.as_str()),
            None => (u32::MAX, u64::MAX, self.rule.as_str()),
        }
    }
}
