//! `rewind explain RULE`: a rule's documentation.

use std::io::Write;

use crate::checks::Rule;
use crate::core::ExitStatus;
use crate::core::RewindError;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The rule's name, as `rewind rules` lists it.
    #[arg(value_parser = super::check::RuleName, hide_possible_values = true)]
    pub rule: String,
}

pub fn run(args: Args) -> Result<ExitStatus, RewindError> {
    let rule: Rule = args.rule.parse().map_err(|_| RewindError::UnknownRule {
        hint: crate::checks::unknown_rule_hint(&args.rule),
        rule: args.rule.clone(),
    })?;
    let meta = rule.meta();
    let mut out = super::Out;
    let doc = format!(
        "# {} ({} by default)\n\n{}\n\n{}",
        meta.name,
        meta.severity,
        meta.summary,
        meta.doc_markdown()
    );
    let width = crate::report::layout::width();
    write!(out, "{}", crate::report::layout::wrap_markdown(&doc, width))?;
    Ok(ExitStatus::Clean)
}
