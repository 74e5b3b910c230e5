//! `rewind sessions STORE`: the sessions of an OpenCode store, each with its size and findings.

use std::io::Write;
use std::path::PathBuf;

use comfy_table::{Table, presets};
use serde_json::json;

use super::diagnose::StoreArgs;
use crate::checks;
use crate::cli::ExitStatus;
use crate::error::RewindError;
use crate::pipeline::{self, Options};
use crate::report::Totals;
use crate::report::snippet::escape;
use crate::source::SourceMap;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An OpenCode database, storage folder or export (`-`: standard input).
    #[arg(value_name = "STORE")]
    pub store: PathBuf,

    /// Output format.
    #[arg(long, value_enum, default_value_t = super::HumanOrJson::Human)]
    pub format: super::HumanOrJson,

    #[command(flatten)]
    pub store_args: StoreArgs,
}

/// `2026-09-28 10:01` (UTC) for epoch milliseconds; `-` outside chrono's range.
pub fn utc_minutes(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || "-".to_owned(),
        |t| t.format("%Y-%m-%d %H:%M").to_string(),
    )
}

pub fn run(args: Args) -> Result<ExitStatus, RewindError> {
    let mut options = Options::default();
    args.store_args.apply(&mut options);
    let mut sources = SourceMap::new();
    let mut rows = Vec::new();
    let enabled = |_: checks::Rule| true;
    pipeline::analyze(&args.store, &options, &mut sources, &mut |_, unit| {
        let Some(a) = unit.primary() else {
            return Ok(());
        };
        let findings = checks::run(a, &enabled);
        for s in &a.sessions {
            let mut totals = Totals::default();
            for f in findings
                .iter()
                .filter(|f| f.ids.session_id.as_deref() == Some(s.id.as_str()))
            {
                totals.count(f.severity);
            }
            let parts: usize = s.messages.iter().map(|m| m.parts.len()).sum();
            // Known only for a database with a `project` table.
            let hidden = a
                .projects
                .as_deref()
                .map(|projects| checks::hidden(s, projects));
            rows.push((
                s.id.clone(),
                s.title.clone(),
                s.parent_id.clone(),
                s.time_updated,
                s.messages.len(),
                parts,
                totals,
                hidden,
            ));
        }
        Ok(())
    })?;
    let mut out = super::Out;
    match args.format {
        super::HumanOrJson::Human => {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.set_header([
                "id",
                "title",
                "updated (UTC)",
                "messages",
                "parts",
                "findings",
            ]);
            for (id, title, parent, updated, messages, parts, totals, hidden) in &rows {
                let mut id = match parent {
                    Some(p) => format!("{id}\n(child of {p})"),
                    None => id.clone(),
                };
                if let Some(Some(why)) = hidden {
                    id.push_str(if why.by_folder_only() {
                        "\n(hidden from lists by folder)"
                    } else {
                        "\n(hidden from OpenCode's list)"
                    });
                }
                t.add_row([
                    escape(&id, true),
                    escape(title.as_deref().unwrap_or("-"), true),
                    updated.map_or("-".to_owned(), utc_minutes),
                    messages.to_string(),
                    parts.to_string(),
                    totals.words(),
                ]);
            }
            writeln!(out, "{t}")?;
            let hidden: Vec<_> = rows
                .iter()
                .filter_map(|r| Some((&r.0, r.7.as_ref()?.as_ref()?)))
                .collect();
            if !hidden.is_empty() {
                writeln!(
                    out,
                    "{} session{} OpenCode would not list (`rewind explain session-hidden`):",
                    hidden.len(),
                    if hidden.len() == 1 { "" } else { "s" }
                )?;
                for (id, why) in hidden {
                    writeln!(
                        out,
                        "  {}: {}{}; it would appear {}",
                        escape(id, false),
                        if why.by_folder_only() {
                            "(lists by folder only) "
                        } else {
                            ""
                        },
                        escape(&why.reason(), false),
                        escape(&why.appears(), false)
                    )?;
                }
            }
            writeln!(
                out,
                "{} session{}; `rewind diagnose {} --session ID` shows the findings of one",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                escape(&args.store.display().to_string(), false)
            )?;
        }
        super::HumanOrJson::Json => {
            let list: Vec<_> = rows
                .iter()
                .map(
                    |(id, title, parent, updated, messages, parts, totals, hidden)| {
                        let mut v = json!({
                            "id": id, "title": title, "parent_id": parent, "time_updated": updated,
                            "messages": messages, "parts": parts, "findings": totals,
                        });
                        // `listed`: whether OpenCode's session list would show it (absent when the
                        // store does not say which projects exist).
                        if let Some(hidden) = hidden {
                            v["listed"] = json!(hidden.is_none());
                            if let Some(why) = hidden {
                                v["hidden"] =
                                    json!({"reason": why.reason(), "appears": why.appears()});
                            }
                        }
                        v
                    },
                )
                .collect();
            serde_json::to_writer_pretty(&mut out, &json!({ "sessions": list }))
                .map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
    }
    Ok(ExitStatus::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_minutes() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(utc_minutes(1_790_589_700_000), "2026-09-28 10:01");
        assert_eq!(utc_minutes(-1), "1969-12-31 23:59");
        assert_eq!(utc_minutes(i64::MAX), "-");
        assert_eq!(utc_minutes(951_782_400_000), "2000-02-29 00:00");
    }
}
