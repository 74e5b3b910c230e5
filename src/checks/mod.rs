//! Stage 4 of the pipeline: the checks — rewind's vocabulary.
//!
//! One check per file. Each declares itself with [`declare_check!`]: a kebab-case name that is a
//! stable contract (configs, baselines and CI annotations refer to it), a default severity, a
//! one-line summary, and a doc comment with *What it does / Why it matters / Example / How to fix*
//! that `rewind explain NAME` prints. A check reads an [`Analysis`] and reports [`Finding`]s; it
//! never opens files and never prints.

mod incidents;
mod streams;

mod empty_text_part;
mod loop_exited_early;
mod message_incomplete;
mod model_substituted;
mod retry_wait_excessive;
mod schema_violation;
mod session_error;
mod sse_concatenated_events;
mod sse_invalid_json;
pub mod step_merged;
mod step_unclosed;
mod stream_error_fatal;
mod stream_out_of_order;
mod stream_provider_error;
mod stream_truncated;
mod tool_call_duplicate;
mod tool_error_dropped;
mod tool_never_finished;
mod tool_use_without_result;
mod undecodable_record;
mod usage_mismatch;
mod validation_crash;

use crate::diagnostic::{Finding, Severity};
use crate::session::Analysis;

/// What a check is, for listings, docs and machine output.
#[derive(Clone, Copy, Debug)]
pub struct CheckMeta {
    /// Kebab-case name: a stable contract.
    pub name: &'static str,
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// The doc comment: What it does / Why it matters / Example / How to fix.
    pub doc: &'static str,
}

impl CheckMeta {
    /// The doc comment as Markdown (the leading space of each `///` line removed).
    pub fn doc_markdown(&self) -> String {
        self.doc
            .lines()
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_owned()
    }

    /// The text of one `## Section` of the doc.
    pub fn section(&self, title: &str) -> Option<String> {
        let doc = self.doc_markdown();
        let start = doc.find(&format!("## {title}"))?;
        let body = &doc[start..];
        let body = &body[body.find('\n')? + 1..];
        let end = body.find("\n## ").unwrap_or(body.len());
        Some(body[..end].trim().to_owned())
    }

    /// A finding of this check at its default severity.
    pub fn finding(&self, message: impl Into<String>) -> Finding {
        Finding::new(self.name, self.severity, message)
    }
}

/// A check.
pub trait Check: Sync {
    fn meta(&self) -> &'static CheckMeta;
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>);
}

/// Declares a check: its struct, doc comment and metadata.
macro_rules! declare_check {
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $name:ident {
            name: $rule:literal,
            severity: $sev:ident,
            summary: $summary:literal $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        $vis struct $name;

        impl $name {
            pub const META: $crate::checks::CheckMeta = $crate::checks::CheckMeta {
                name: $rule,
                severity: $crate::diagnostic::Severity::$sev,
                summary: $summary,
                doc: concat!($($doc, "\n"),*),
            };
        }
    };
}
pub(crate) use declare_check;

/// Every check, in catalogue order.
pub static ALL: &[&dyn Check] = &[
    &schema_violation::SchemaViolation,
    &validation_crash::ValidationCrash,
    &tool_never_finished::ToolNeverFinished,
    &tool_error_dropped::ToolErrorDropped,
    &step_unclosed::StepUnclosed,
    &session_error::SessionError,
    &stream_error_fatal::StreamErrorFatal,
    &sse_concatenated_events::SseConcatenatedEvents,
    &tool_use_without_result::ToolUseWithoutResult,
    &undecodable_record::UndecodableRecord,
    &sse_invalid_json::SseInvalidJson,
    &stream_truncated::StreamTruncated,
    &stream_out_of_order::StreamOutOfOrder,
    &stream_provider_error::StreamProviderError,
    &step_merged::StepMerged,
    &empty_text_part::EmptyTextPart,
    &tool_call_duplicate::ToolCallDuplicate,
    &message_incomplete::MessageIncomplete,
    &loop_exited_early::LoopExitedEarly,
    &usage_mismatch::UsageMismatch,
    &model_substituted::ModelSubstituted,
    &retry_wait_excessive::RetryWaitExcessive,
];

/// The check called `name`.
pub fn find(name: &str) -> Option<&'static dyn Check> {
    ALL.iter().copied().find(|c| c.meta().name == name)
}

/// Runs every check `enabled` accepts, and returns the findings in source order.
pub fn run(analysis: &Analysis, enabled: &dyn Fn(&CheckMeta) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for check in ALL {
        if enabled(check.meta()) {
            check.run(analysis, &mut out);
        }
    }
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_documented() {
        let mut names: Vec<&str> = ALL.iter().map(|c| c.meta().name).collect();
        for name in &names {
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{name} is not kebab-case"
            );
        }
        for check in ALL {
            let meta = check.meta();
            for section in ["What it does", "Why it matters", "Example", "How to fix"] {
                assert!(
                    meta.section(section).is_some_and(|s| !s.is_empty()),
                    "{} has no `## {section}`",
                    meta.name
                );
            }
        }
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate check names");
    }
}
