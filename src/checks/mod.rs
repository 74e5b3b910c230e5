//! Stage 4 of the pipeline: the checks — rewind's vocabulary.
//!
//! One check per file. Each declares itself with [`declare_check!`]: a kebab-case name that is a
//! stable contract (configs, baselines and CI annotations refer to it), a default severity, a
//! one-line summary, and a doc comment with *What it does / Why it matters / Example / How to fix*
//! that `rewind explain NAME` prints. A check reads an [`Analysis`] and reports [`Finding`]s; it
//! never opens files and never prints. A check that can repair what it finds also implements
//! [`Check::fix`]: `rewind repair` plans by asking each finding's rule (see [`fix`]).
//!
//! The `rules!` list registers every check once and generates [`Rule`], the typed identity of a
//! rule used by findings, configuration, baselines, SARIF and repair.

pub mod diagnostic;
pub mod fix;
mod incidents;
pub mod quiet;
pub use session_hidden::hidden;
mod streams;
mod unread;

use std::fmt;
use std::str::FromStr;

use crate::checks::diagnostic::{Finding, Severity};
use crate::session::Analysis;
use crate::text::InputText;

pub use fix::{Fix, FixContext};

/// What `thinking-modified` finds, for the transcript repair that undoes it.
pub mod thinking {
    pub use super::thinking_modified::{Change, modified, violations};
}

/// What a check is, for listings, docs and machine output.
#[derive(Clone, Copy, Debug)]
pub struct CheckMeta {
    /// The rule this check reports.
    pub rule: Rule,
    /// Kebab-case name: a stable contract.
    pub name: &'static str,
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// The doc comment: What it does / Why it matters / Example / How to fix.
    pub doc: &'static str,
    /// What `rewind repair` changes in a stored session for a finding of this rule, in words
    /// (none when the rule has no fix).
    pub fix: Option<&'static str>,
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
    pub fn finding(&self, message: impl Into<InputText>) -> Finding {
        Finding::new(self.rule, self.severity, message)
    }
}

/// A check: what [`declare_check!`] declares, plus how it runs and, optionally, how a finding of
/// it is repaired.
pub trait Check: Sync {
    /// Reports the findings of this rule on `analysis`.
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>);

    /// The change that repairs `finding` in a stored OpenCode session, added to `ctx`'s plan.
    /// Rules that cannot repair anything keep this default.
    fn fix(&self, _finding: &Finding, _ctx: &mut FixContext<'_>) -> Fix {
        Fix::NotFixable
    }

    /// When this rule's fixes are planned: phase 0 (edits of existing records, in finding
    /// order) before phase 1 (step boundaries inserted per message, in message order).
    fn fix_phase(&self) -> u8 {
        0
    }
}

/// Declares a check: its struct, doc comment and metadata (`Self::META`, `Self::RULE`). The
/// struct's name is the [`Rule`] variant; register it once in the `rules!` list below.
macro_rules! declare_check {
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $name:ident {
            name: $rule:literal,
            severity: $sev:ident,
            summary: $summary:literal
            $(, fix: $fix:literal)? $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        $vis struct $name;

        impl $name {
            /// This check's rule.
            #[allow(dead_code)]
            pub const RULE: $crate::checks::Rule = $crate::checks::Rule::$name;
            /// This check's metadata.
            pub const META: $crate::checks::CheckMeta = $crate::checks::CheckMeta {
                rule: $crate::checks::Rule::$name,
                name: $rule,
                severity: $crate::checks::diagnostic::Severity::$sev,
                summary: $summary,
                doc: concat!($($doc, "\n"),*),
                fix: $crate::checks::optional_str!($($fix)?),
            };
        }
    };
}
/// `Some(text)` when a text was given, else `None`.
macro_rules! optional_str {
    () => {
        None
    };
    ($text:literal) => {
        Some($text)
    };
}
pub(crate) use optional_str;

/// Registers the checks: declares their modules and generates [`Rule`], whose variants are the
/// checks' struct names in catalogue order, and whose kebab-case names are the checks' `name`s.
macro_rules! rules {
    ($($module:ident :: $check:ident),* $(,)?) => {
        $(mod $module;)*

        /// A rule: what a finding is about. Its kebab-case name ([`Rule::as_str`]) is a stable
        /// contract (configs, baselines, SARIF rule ids); `tests/snapshots` pins the list.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $($check,)*
        }

        impl Rule {
            /// Every rule, in catalogue order.
            pub const ALL: &'static [Rule] = &[$(Rule::$check,)*];

            /// The rule's metadata.
            pub const fn meta(self) -> &'static CheckMeta {
                match self {
                    $(Rule::$check => &$module::$check::META,)*
                }
            }

            /// The check that reports this rule.
            pub fn check(self) -> &'static dyn Check {
                match self {
                    $(Rule::$check => &$module::$check,)*
                }
            }
        }
    };
}

rules! {
    schema_violation::SchemaViolation,
    validation_crash::ValidationCrash,
    tool_never_finished::ToolNeverFinished,
    tool_error_dropped::ToolErrorDropped,
    step_unclosed::StepUnclosed,
    session_error::SessionError,
    stream_error_fatal::StreamErrorFatal,
    sse_concatenated_events::SseConcatenatedEvents,
    tool_use_without_result::ToolUseWithoutResult,
    undecodable_record::UndecodableRecord,
    sse_invalid_json::SseInvalidJson,
    stream_truncated::StreamTruncated,
    stream_out_of_order::StreamOutOfOrder,
    stream_provider_error::StreamProviderError,
    step_merged::StepMerged,
    empty_text_part::EmptyTextPart,
    tool_call_duplicate::ToolCallDuplicate,
    message_incomplete::MessageIncomplete,
    loop_exited_early::LoopExitedEarly,
    usage_mismatch::UsageMismatch,
    model_substituted::ModelSubstituted,
    retry_wait_excessive::RetryWaitExcessive,
    session_hidden::SessionHidden,
    reply_truncated::ReplyTruncated,
    storage_file_damaged::StorageFileDamaged,
    tool_result_orphaned::ToolResultOrphaned,
    transcript_tree_broken::TranscriptTreeBroken,
    rollout_order_broken::RolloutOrderBroken,
    subagent_orphaned::SubagentOrphaned,
    transcript_oversized::TranscriptOversized,
    thinking_modified::ThinkingModified,
    run_hung::RunHung,
    compaction_summary_lost::CompactionSummaryLost,
}

impl Rule {
    /// The kebab-case name.
    pub const fn as_str(self) -> &'static str {
        self.meta().name
    }

    /// How early in a chain of failure this rule's findings usually stand: causes (corrupt data,
    /// lost usage, a swapped model, a wait of hours) before what they set off (a fatal stream
    /// error, an early exit, a dropped tool error), before the session's error, before its
    /// aftermath (unclosed or merged steps, tools left open). The human report opens with the
    /// first. Every rule is listed: a new rule must say where it sits.
    pub const fn causal_rank(self) -> u8 {
        match self {
            Rule::SseConcatenatedEvents
            | Rule::SseInvalidJson
            | Rule::SchemaViolation
            | Rule::ValidationCrash
            | Rule::UsageMismatch
            | Rule::ModelSubstituted
            | Rule::RetryWaitExcessive
            | Rule::StreamOutOfOrder
            | Rule::StreamProviderError
            | Rule::UndecodableRecord
            | Rule::SessionHidden
            | Rule::StorageFileDamaged
            | Rule::TranscriptTreeBroken
            | Rule::RolloutOrderBroken
            | Rule::SubagentOrphaned
            | Rule::TranscriptOversized
            | Rule::CompactionSummaryLost => 0,
            Rule::StreamErrorFatal
            | Rule::ToolErrorDropped
            | Rule::LoopExitedEarly
            | Rule::StreamTruncated
            | Rule::ReplyTruncated
            | Rule::EmptyTextPart
            | Rule::ToolCallDuplicate => 1,
            Rule::SessionError | Rule::RunHung => 2,
            Rule::ToolNeverFinished
            | Rule::StepUnclosed
            | Rule::MessageIncomplete
            | Rule::StepMerged
            | Rule::ToolUseWithoutResult
            | Rule::ToolResultOrphaned
            | Rule::ThinkingModified => 3,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Advice to repair with rewind, worded for the input at hand: `rewind repair` repairs OpenCode's
/// stores (`store_does` says what it changes there) and client transcripts (`transcript_does`,
/// when the rule's finding is repaired there); a log, a capture or a recording is only a record
/// of a session, which `rewind repair` refuses, so the advice names the store that holds it:
/// the client's own transcript for a session a log recorded from one (`recorded_from`, Claude
/// Code's `stream-json`), else the OpenCode database or export.
pub(crate) fn repair_help(
    format: crate::core::Format,
    recorded_from: Option<crate::core::Format>,
    store_does: &str,
    transcript_does: Option<&str>,
) -> String {
    if format.is_opencode_store() {
        return format!("`rewind repair` {store_does}");
    }
    if let (true, Some(does)) = (format.is_client_transcript(), transcript_does) {
        return format!("`rewind repair` {does}");
    }
    let record = format.describe();
    match (recorded_from, transcript_does) {
        (Some(client), Some(does)) => format!(
            "`rewind repair` on this session's own file, {} (`rewind sessions` finds it), {does} ({record} is only a record of it: rewind does not repair it)",
            client.describe()
        ),
        (Some(client), None) => format!(
            "this session is kept in {}, where `rewind repair` does not change this ({record} is only a record of it)",
            client.describe()
        ),
        (None, _) => format!(
            "`rewind repair` on the OpenCode database or export that holds this session {store_does} ({record} is only a record of it: rewind does not repair it)"
        ),
    }
}

/// A name that is no rule's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule `{}`{}", crate::text::clip(.0), unknown_rule_hint(.0))]
pub struct UnknownRule(pub String);

/// The rule a mistyped `name` most likely meant: the closest by edit distance, if it is close
/// (at most a third of the name's length, and at least one edit allowed).
pub fn closest_rule(name: &str) -> Option<Rule> {
    let limit = (name.chars().count() / 3).max(1);
    Rule::ALL
        .iter()
        .map(|r| (strsim::levenshtein(name, r.as_str()), *r))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, r)| r)
}

/// What an error about an unknown rule `name` says after it: `; did you mean `…`?` when a rule
/// is close, else where the rules are listed.
pub fn unknown_rule_hint(name: &str) -> String {
    match closest_rule(name) {
        Some(rule) => format!("; did you mean `{}`?", rule.as_str()),
        None => " (`rewind rules` lists them)".to_owned(),
    }
}

impl FromStr for Rule {
    type Err = UnknownRule;

    fn from_str(s: &str) -> Result<Rule, UnknownRule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRule(s.to_owned()))
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rule, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Records from which the checks of one analysis run side by side on rayon's pool (below, the
/// pool's start-up and hand-overs cost more than the checks).
const PARALLEL_FROM: usize = 4096;

/// Runs every check `enabled` accepts, and returns the findings in source order.
///
/// The checks are independent readers of the analysis. On a large one, and when not already on
/// a worker of the pool (`check` diagnoses its files side by side), they run in parallel; their
/// findings are joined in rule order, as the serial loop makes them, before the stable sort.
pub fn run(analysis: &Analysis, enabled: &(dyn Fn(Rule) -> bool + Sync)) -> Vec<Finding> {
    let large = || {
        analysis.events.len()
            + analysis
                .sessions
                .iter()
                .map(|s| s.messages.len())
                .sum::<usize>()
            >= PARALLEL_FROM
    };
    run_in(
        analysis,
        enabled,
        rayon::current_thread_index().is_none() && large(),
    )
}

/// [`run`], with the checks side by side on rayon's pool or one after the other.
pub(crate) fn run_in(
    analysis: &Analysis,
    enabled: &(dyn Fn(Rule) -> bool + Sync),
    parallel: bool,
) -> Vec<Finding> {
    use rayon::prelude::*;
    let rules: Vec<Rule> = Rule::ALL.iter().copied().filter(|&r| enabled(r)).collect();
    let mut out = Vec::new();
    if parallel {
        let each: Vec<Vec<Finding>> = rules
            .par_iter()
            .map(|rule| {
                let mut found = Vec::new();
                rule.check().run(analysis, &mut found);
                found
            })
            .collect();
        out = each.into_iter().flatten().collect();
    } else {
        for rule in rules {
            rule.check().run(analysis, &mut out);
        }
    }
    compacted_away(analysis, &mut out);
    not_repaired_in_v2(analysis, &mut out);
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out
}

/// Findings about an OpenCode message that a compaction left out of the next request (as
/// `crate::formats::opencode::request` rebuilt it: `Session::compaction`) say so,
/// one severity lower (an error becomes a warning, a warning information): the record is still
/// broken as stored (an export, a revert of the compaction, another tool reading the store see
/// it), but it no longer breaks the session. Findings about the store itself (a row that does
/// not decode or does not satisfy the schema, usage accounting) keep their severity.
fn compacted_away(analysis: &Analysis, out: &mut [Finding]) {
    if !analysis.format.is_opencode_store() {
        return;
    }
    for session in &analysis.sessions {
        let Some(compaction) = &session.compaction else {
            continue;
        };
        for f in out.iter_mut() {
            if f.ids.session_id.as_deref() != Some(session.id.as_str())
                || !f
                    .ids
                    .message_id
                    .as_deref()
                    .is_some_and(|m| compaction.left_out.contains(m))
                || matches!(
                    f.rule,
                    Rule::SchemaViolation | Rule::UndecodableRecord | Rule::UsageMismatch
                )
            {
                continue;
            }
            f.notes.push(format!(
                "this message is before the compaction at {} and is no longer sent to the model",
                compaction.at
            ).into());
            // One level below the rule's own severity, and never lower than that: a check that
            // already lowered the finding for the same reason (the session went on past it) is
            // not lowered twice.
            let lowered = match f.rule.meta().severity {
                Severity::Error => Severity::Warning,
                Severity::Warning | Severity::Info => Severity::Info,
            };
            f.severity = f.severity.min(lowered);
        }
    }
}

/// `rewind repair` edits a v2-runtime session's row only (`session-hidden`), never its
/// `session_message` rows: the hint of any other finding of such a session whose rule has a
/// fix says instead that the repair leaves it.
fn not_repaired_in_v2(analysis: &Analysis, out: &mut [Finding]) {
    for session in analysis.sessions.iter().filter(|s| s.runtime_v2) {
        for f in out.iter_mut() {
            if f.rule == Rule::SessionHidden
                || f.rule.meta().fix.is_none()
                || f.ids.session_id.as_deref() != Some(session.id.as_str())
            {
                continue;
            }
            f.help = Some(format!(
                "`rewind repair` leaves this: the session is kept in OpenCode's v2 `session_message` store, which it does not edit (`rewind explain {}` says what a fix changes)",
                f.rule
            ).into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_documented() {
        let mut names: Vec<&str> = Rule::ALL.iter().map(|r| r.as_str()).collect();
        for name in &names {
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{name} is not kebab-case"
            );
        }
        for rule in Rule::ALL {
            let meta = rule.meta();
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

    /// The kebab-case name is the struct's name, spelled out: `StepMerged` is `step-merged`.
    #[test]
    fn names_spell_the_variants() {
        for &rule in Rule::ALL {
            let mut kebab = String::new();
            for (i, c) in format!("{rule:?}").chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    kebab.push('-');
                }
                kebab.push(c.to_ascii_lowercase());
            }
            assert_eq!(rule.as_str(), kebab);
            assert_eq!(rule.meta().rule, rule);
            assert_eq!(rule.as_str().parse::<Rule>(), Ok(rule));
        }
        assert!("no-such-rule".parse::<Rule>().is_err());
    }
}
