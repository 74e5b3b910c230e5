//! `rewind rules`: the rule catalogue.

use std::io::Write;

use comfy_table::{Table, presets};
use serde_json::json;

use super::HumanOrJson as Format;
use crate::checks::Rule;
use crate::core::ExitStatus;
use crate::core::RewindError;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// A rule as `rewind rules --format json` lists it (and `rewind mcp`'s `explain` returns it).
pub fn entry(rule: Rule) -> serde_json::Value {
    let m = rule.meta();
    json!({"name": m.name, "severity": m.severity, "summary": m.summary, "fix": m.fix, "doc": m.doc_markdown()})
}

pub fn run(args: Args) -> Result<ExitStatus, RewindError> {
    let mut out = super::Out;
    match args.format {
        Format::Human => {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.set_header(["rule", "severity", "what it reports"]);
            for rule in Rule::ALL {
                let m = rule.meta();
                t.add_row([m.name, &m.severity.to_string(), m.summary]);
            }
            // Fitted to the terminal's width (see `report::layout`).
            let width = crate::report::layout::width();
            writeln!(out, "{}", crate::report::layout::fit_table(t, width))?;
            writeln!(out, "`rewind explain RULE` prints a rule's documentation.")?;
        }
        Format::Json => {
            let rules: Vec<_> = Rule::ALL.iter().map(|rule| entry(*rule)).collect();
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(json!({ "rules": rules })),
            )?;
            writeln!(out)?;
        }
    }
    Ok(ExitStatus::Clean)
}
