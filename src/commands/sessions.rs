//! `rewind sessions STORE`: the sessions of an OpenCode store, each with its size and findings;
//! of every store of OpenCode's data folder, or of every store found on this machine, with
//! `sessions_stores`.

use std::io::Write;
use std::path::{Path, PathBuf};

use comfy_table::{Table, presets};
use serde_json::json;

use super::diagnose::StoreArgs;
use crate::checks;
use crate::core::ExitStatus;
use crate::core::RewindError;
use crate::formats::opencode::data as opencode_data;
use crate::pipeline::{self, Options};
use crate::report::Totals;
use crate::source::SourceMap;
use crate::text::InputText;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An OpenCode database, storage folder or export (`-`: standard input), or OpenCode's data
    /// folder (every store in it is listed). Without it, the stores of this machine are searched:
    /// OpenCode's data folder, Claude Code's and Codex's transcripts.
    #[arg(value_name = "STORE")]
    pub store: Option<PathBuf>,

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

/// Why OpenCode's list would not show a session.
#[derive(Clone, Debug)]
pub struct HiddenWhy {
    pub by_folder_only: bool,
    pub reason: String,
    pub appears: String,
}

/// One session of a store, as listed.
#[derive(Clone, Debug)]
pub struct Row {
    pub id: String,
    pub title: Option<String>,
    pub parent: Option<String>,
    pub updated: Option<i64>,
    pub messages: usize,
    pub parts: usize,
    pub totals: Totals,
    /// `None` when the store does not say which projects exist; `Some(None)` when listed.
    pub hidden: Option<Option<HiddenWhy>>,
}

/// The sessions of one store, and the findings about the store itself (damaged files of a
/// storage folder).
#[derive(Debug, Default)]
pub struct Listing {
    pub rows: Vec<Row>,
    pub store_findings: Totals,
}

/// Lists the sessions of the store at `path`, each with its findings.
pub fn collect(path: &Path, options: &Options) -> Result<Listing, RewindError> {
    let mut sources = SourceMap::new();
    let mut listing = Listing::default();
    let mut about_sessions = Vec::new();
    let enabled = |_: checks::Rule| true;
    pipeline::analyze(path, options, &mut sources, &mut |_, unit| {
        let Some(a) = unit.primary() else {
            return Ok(());
        };
        let findings = checks::run(a, &enabled);
        if a.sessions.is_empty() {
            // Findings about the store's files (a storage folder's damaged files): a session's
            // when they name one, the store's otherwise.
            for f in &findings {
                match &f.ids.session_id {
                    Some(s) => about_sessions.push((s.clone(), f.severity)),
                    None => listing.store_findings.count(f.severity),
                }
            }
        }
        // Findings by session, counted in one pass (not once per session).
        let mut by_session: crate::FastMap<&str, Totals> = crate::FastMap::default();
        for f in &findings {
            if let Some(id) = f.ids.session_id.as_deref() {
                by_session.entry(id).or_default().count(f.severity);
            }
        }
        for s in &a.sessions {
            let totals = by_session.get(s.id.as_str()).copied().unwrap_or_default();
            let parts: usize = s.messages.iter().map(|m| m.parts.len()).sum();
            // Known only for a database with a `project` table.
            let hidden = a.projects.as_deref().map(|projects| {
                checks::hidden(s, projects, &a.here).map(|why| HiddenWhy {
                    by_folder_only: why.by_folder_only(),
                    reason: why.reason(),
                    appears: why.appears(),
                })
            });
            listing.rows.push(Row {
                id: s.id.clone(),
                title: s.title.clone(),
                parent: s.parent_id.clone(),
                updated: s.time_updated,
                messages: s.messages.len(),
                parts,
                totals,
                hidden,
            });
        }
        Ok(())
    })?;
    // Each session's row (the first of an id, as a search finds it).
    let row_of = crate::first_of((listing.rows.iter().enumerate()).map(|(k, r)| (r.id.clone(), k)));
    for (id, severity) in about_sessions {
        match row_of.get(&id).and_then(|&k| listing.rows.get_mut(k)) {
            Some(r) => r.totals.count(severity),
            None => listing.store_findings.count(severity),
        }
    }
    Ok(listing)
}

/// The table of sessions.
pub fn table(rows: &[Row]) -> Table {
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
    for r in rows {
        let mut id = match &r.parent {
            Some(p) => format!("{}\n(child of {p})", r.id),
            None => r.id.clone(),
        };
        if let Some(Some(why)) = &r.hidden {
            id.push_str(if why.by_folder_only {
                "\n(hidden from lists by folder)"
            } else {
                "\n(hidden from OpenCode's list)"
            });
        }
        t.add_row([
            InputText::from(&id).for_terminal_lines(),
            InputText::from(r.title.as_deref().unwrap_or("-")).for_terminal_lines(),
            r.updated.map_or("-".to_owned(), utc_minutes),
            r.messages.to_string(),
            r.parts.to_string(),
            r.totals.words(),
        ]);
    }
    t
}

/// The lines under the table that say why each hidden session is hidden.
pub fn write_hidden(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    let hidden: Vec<_> = rows
        .iter()
        .filter_map(|r| Some((&r.id, r.hidden.as_ref()?.as_ref()?)))
        .collect();
    if hidden.is_empty() {
        return Ok(());
    }
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
            InputText::from(id).for_terminal(),
            if why.by_folder_only {
                "(lists by folder only) "
            } else {
                ""
            },
            InputText::from(&why.reason).for_terminal(),
            InputText::from(&why.appears).for_terminal()
        )?;
    }
    Ok(())
}

/// A session as JSON.
pub fn row_json(r: &Row) -> serde_json::Value {
    let mut v = json!({
        "id": r.id, "title": r.title, "parent_id": r.parent, "time_updated": r.updated,
        "messages": r.messages, "parts": r.parts, "findings": r.totals,
    });
    // `listed`: whether OpenCode's session list would show it (absent when the store does not
    // say which projects exist).
    if let Some(hidden) = &r.hidden {
        v["listed"] = json!(hidden.is_none());
        if let Some(why) = hidden {
            v["hidden"] = json!({"reason": why.reason, "appears": why.appears});
        }
    }
    v
}

pub fn run(args: Args) -> Result<ExitStatus, RewindError> {
    let mut options = Options::default();
    args.store_args.apply(&mut options);
    let Some(store) = args.store.as_deref() else {
        return super::sessions_stores::run_found(&options, args.format);
    };
    if !crate::ingest::input::is_stdin(store) && opencode_data::is_data_folder(store) {
        return super::sessions_stores::run_folder(store, &options, args.format);
    }
    if !crate::ingest::input::is_stdin(store)
        && store.is_dir()
        && !opencode_data::kilo_stores_in(store).is_empty()
    {
        return super::sessions_stores::run_kilo_folder(store, &options, args.format);
    }
    if !crate::ingest::input::is_stdin(store)
        && store.is_dir()
        && crate::formats::is_transcript_folder(store)
    {
        return super::sessions_stores::run_transcripts(store, &options, args.format);
    }
    let Listing { rows, .. } = collect(store, &options)?;
    let width = (args.format == super::HumanOrJson::Human).then(crate::report::layout::width);
    let mut out = crate::report::layout::Fitted::new(super::Out, width);
    match args.format {
        super::HumanOrJson::Human => {
            let shown = crate::report::layout::fit_table(
                table(&rows),
                width.unwrap_or(crate::report::layout::DEFAULT_WIDTH),
            );
            writeln!(out, "{shown}")?;
            write_hidden(&mut out, &rows)?;
            writeln!(
                out,
                "{} session{}; `rewind diagnose {} --session ID` shows the findings of one",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                InputText::from(&store.display().to_string()).for_terminal()
            )?;
        }
        super::HumanOrJson::Json => {
            let list: Vec<_> = rows.iter().map(row_json).collect();
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(json!({ "sessions": list })),
            )?;
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
