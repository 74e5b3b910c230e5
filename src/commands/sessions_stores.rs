//! `rewind sessions DATA_FOLDER` and `rewind sessions` with no store: every session store of
//! OpenCode's data folder, or of this machine, with its session counts, then the sessions of
//! each, so sessions stranded in a store the running OpenCode does not read are seen.
//!
//! Where the stores are (from the clients' sources):
//!
//! * OpenCode: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`, on every platform
//!   (`xdg-basedir` does not branch by platform; on Windows `~` is `%USERPROFILE%`). Both are
//!   searched when they differ: a shell that sets `XDG_DATA_HOME` and one that does not write to
//!   different folders. `OPENCODE_DB` names another database. Which database a build reads is
//!   in `crate::formats::opencode::data`.
//! * Claude Code: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`: one transcript per
//!   session (`<project>/<session>.jsonl`), subagents' beside it
//!   (`<project>/<session>/subagents/agent-*.jsonl`).
//! * Codex: `$CODEX_HOME/sessions`, else `~/.codex/sessions`: `YYYY/MM/DD/rollout-*.jsonl`.
//! * Gemini CLI: `$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`:
//!   `<project>/chats/session-*.jsonl` (and the legacy `session-*.json`), Gemini CLI 0.61.0.
//! * GitHub Copilot CLI: `$COPILOT_HOME/session-state`, else `~/.copilot/session-state`: one
//!   folder per session, `<id>/events.jsonl` (Copilot CLI 1.0.102).
//! * Kilo Code CLI (an OpenCode fork with its database): `$XDG_DATA_HOME/kilo`, else
//!   `~/.local/share/kilo`, holding `kilo.db` (or `kilo-<channel>.db`); `KILO_DB` names another
//!   database, resolved as `OPENCODE_DB` is (Kilo 7.7.7).

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use comfy_table::{Table, presets};

use crate::report::layout::Fitted;
use rayon::prelude::*;
use serde_json::{Value, json};

use super::HumanOrJson;
use super::sessions::{Listing, Row, collect, row_json, table, utc_minutes, write_hidden};
use crate::core::ExitStatus;
use crate::core::RewindError;
use crate::formats::opencode::data::{self as opencode_data, DEFAULT_DB, StoreKind, WHICH_STORE};
use crate::pipeline::Options;
use crate::report::Totals;
use crate::text::InputText;

/// What kind of store a listing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    OpencodeDb,
    OpencodeStorage,
    KiloDb,
    Claude,
    Codex,
    Gemini,
    Copilot,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::OpencodeDb => "opencode-database",
            Kind::OpencodeStorage => "opencode-storage",
            Kind::KiloDb => "kilo-database",
            Kind::Claude => "claude-code-transcripts",
            Kind::Codex => "codex-rollouts",
            Kind::Gemini => "gemini-cli-sessions",
            Kind::Copilot => "copilot-sessions",
        }
    }

    fn is_transcripts(self) -> bool {
        matches!(
            self,
            Kind::Claude | Kind::Codex | Kind::Gemini | Kind::Copilot
        )
    }
}

/// One store and its sessions.
struct StoreListing {
    /// `opencode.db`, `storage/`, `Claude Code transcripts`.
    label: String,
    path: PathBuf,
    kind: Kind,
    channel: Option<String>,
    read_by: String,
    /// Each session, with the transcript it is in (transcripts only).
    rows: Vec<(Row, Option<PathBuf>)>,
    /// Findings about the store itself (damaged files of a storage folder).
    store_findings: Totals,
    /// Transcripts that could not be read, with why.
    unreadable: Vec<(PathBuf, String)>,
    /// Why the store could not be read at all.
    error: Option<String>,
    /// Sessions of this store that `opencode.db` of the same folder does not hold (OpenCode
    /// stores other than `opencode.db` only).
    not_in_default: Option<usize>,
}

impl StoreListing {
    fn hidden(&self) -> Option<usize> {
        let mut known = false;
        let mut n = 0;
        for (r, _) in &self.rows {
            if let Some(h) = &r.hidden {
                known = true;
                n += usize::from(h.is_some());
            }
        }
        known.then_some(n)
    }

    fn totals(&self) -> Totals {
        let mut t = self.store_findings;
        for (r, _) in &self.rows {
            t.merge(r.totals);
        }
        t
    }

    fn json(&self) -> Value {
        let list: Vec<Value> = self
            .rows
            .iter()
            .map(|(r, file)| {
                let mut v = row_json(r);
                if let Some(f) = file {
                    v["file"] = json!(f);
                }
                v
            })
            .collect();
        json!({
            "store": self.label, "path": self.path, "kind": self.kind.name(),
            "channel": self.channel, "read_by": self.read_by,
            "sessions": self.rows.len(), "hidden": self.hidden(),
            "not_in_opencode_db": self.not_in_default,
            "findings": self.totals(), "store_findings": self.store_findings,
            "unreadable": self.unreadable.iter().map(|(p, why)| json!({"file": p, "error": why})).collect::<Vec<_>>(),
            "error": self.error, "list": list,
        })
    }
}

/// The stores of one OpenCode data folder, with which sessions are missing from `opencode.db`.
fn folder_listings(dir: &Path, options: &Options) -> Vec<StoreListing> {
    let mut listings: Vec<StoreListing> = opencode_data::stores_in(dir)
        .into_iter()
        .map(|store| {
            // SQLite reads an empty file as an empty database: no sessions, nothing wrong.
            let empty_db = matches!(store.kind, StoreKind::Database { .. })
                && std::fs::metadata(&store.path).is_ok_and(|m| m.len() == 0);
            let listed = if empty_db {
                Ok(Listing::default())
            } else {
                collect(&store.path, options)
            };
            let (rows, store_findings, error) = match listed {
                Ok(Listing {
                    rows,
                    store_findings,
                }) => (rows, store_findings, None),
                Err(e) => (Vec::new(), Totals::default(), Some(e.message())),
            };
            StoreListing {
                kind: match store.kind {
                    StoreKind::Database { .. } => Kind::OpencodeDb,
                    StoreKind::Storage => Kind::OpencodeStorage,
                },
                label: store.name.clone(),
                channel: store.channel().map(str::to_owned),
                read_by: store.read_by(),
                path: store.path,
                rows: rows.into_iter().map(|r| (r, None)).collect(),
                store_findings,
                unreadable: Vec::new(),
                error,
                not_in_default: None,
            }
        })
        .collect();
    let default: HashSet<String> = listings
        .iter()
        .filter(|l| l.label == DEFAULT_DB)
        .flat_map(|l| l.rows.iter().map(|(r, _)| r.id.clone()))
        .collect();
    for l in &mut listings {
        if l.label != DEFAULT_DB && l.error.is_none() {
            l.not_in_default = Some(
                l.rows
                    .iter()
                    .filter(|(r, _)| !default.contains(&r.id))
                    .count(),
            );
        }
    }
    listings
}

/// Human output's width, or none for JSON (see `report::layout`).
fn human_width(format: HumanOrJson) -> Option<usize> {
    (format == HumanOrJson::Human).then(crate::report::layout::width)
}

/// `t` fitted to the terminal.
fn fit(t: Table) -> String {
    crate::report::layout::fit_table(t, crate::report::layout::width())
}

fn summary_table(listings: &[StoreListing], with_path: bool) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["store"];
    if with_path {
        header.push("path");
    }
    // Only OpenCode's stores are compared with opencode.db.
    let opencode = listings
        .iter()
        .any(|l| matches!(l.kind, Kind::OpencodeDb | Kind::OpencodeStorage));
    header.extend(["sessions", "hidden"]);
    if opencode {
        header.push("not in opencode.db");
    }
    header.push("findings");
    t.set_header(header);
    for l in listings {
        let mut row = vec![InputText::from(&l.label).for_terminal_lines()];
        if with_path {
            row.push(InputText::from(&l.path.display().to_string()).for_terminal_lines());
        }
        let sessions = match &l.error {
            Some(_) => "unreadable".to_owned(),
            None if !l.unreadable.is_empty() => {
                format!("{} ({} unreadable)", l.rows.len(), l.unreadable.len())
            }
            None => l.rows.len().to_string(),
        };
        row.extend([sessions, l.hidden().map_or("-".into(), |n| n.to_string())]);
        if opencode {
            row.push(l.not_in_default.map_or("-".into(), |n| n.to_string()));
        }
        row.push(l.totals().words());
        t.add_row(row);
    }
    t
}

/// The sessions of a transcript store: the file instead of a title.
fn transcript_table(root: &Path, rows: &[(Row, Option<PathBuf>)]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "id",
        "file",
        "updated (UTC)",
        "messages",
        "parts",
        "findings",
    ]);
    for (r, file) in rows {
        let shown = file
            .as_deref()
            .map(|f| f.strip_prefix(root).unwrap_or(f).display().to_string())
            .unwrap_or_default();
        t.add_row([
            InputText::from(&r.id).for_terminal_lines(),
            InputText::from(&shown).for_terminal_lines(),
            r.updated.map_or("-".to_owned(), utc_minutes),
            r.messages.to_string(),
            r.parts.to_string(),
            r.totals.words(),
        ]);
    }
    t
}

/// Each store's sessions, under a heading.
fn write_sessions(out: &mut impl Write, listings: &[StoreListing]) -> std::io::Result<()> {
    for l in listings {
        let n = l.rows.len();
        let heading = format!(
            "{} ({}): {n} session{}; read by {}",
            l.label,
            l.path.display(),
            if n == 1 { "" } else { "s" },
            l.read_by
        );
        writeln!(out, "\n{}", InputText::from(&heading).for_terminal())?;
        if let Some(e) = &l.error {
            writeln!(
                out,
                "  cannot be read: {}",
                InputText::from(e).for_terminal()
            )?;
            continue;
        }
        if n > 0 {
            if l.kind.is_transcripts() {
                writeln!(out, "{}", fit(transcript_table(&l.path, &l.rows)))?;
            } else {
                let rows: Vec<Row> = l.rows.iter().map(|(r, _)| r.clone()).collect();
                writeln!(out, "{}", fit(table(&rows)))?;
                write_hidden(out, &rows)?;
            }
        }
        if l.store_findings.total() > 0 {
            writeln!(
                out,
                "the store itself: {} (`rewind diagnose {}` says which files)",
                l.store_findings.words(),
                InputText::from(&l.path.display().to_string()).for_terminal()
            )?;
        }
        for (file, why) in &l.unreadable {
            writeln!(
                out,
                "  unreadable: {}: {}",
                InputText::from(&file.display().to_string()).for_terminal(),
                InputText::from(why).for_terminal()
            )?;
        }
    }
    Ok(())
}

/// What the counts mean for a user looking for their sessions.
fn write_notes(out: &mut impl Write, listings: &[StoreListing]) -> std::io::Result<()> {
    for l in listings {
        let Some(n) = l.not_in_default.filter(|&n| n > 0) else {
            continue;
        };
        let (sessions, them) = if n == 1 {
            ("session is", "it")
        } else {
            ("sessions are", "them")
        };
        let path = InputText::from(&l.path.display().to_string()).for_terminal();
        match l.kind {
            Kind::OpencodeDb => {
                // OpenCode takes a relative OPENCODE_DB in its data folder: name the file whole.
                let absolute = std::path::absolute(&l.path).unwrap_or_else(|_| l.path.clone());
                let absolute = InputText::from(&absolute.display().to_string()).for_terminal();
                writeln!(
                    out,
                    "{n} {sessions} only in {path}: an OpenCode release reads {DEFAULT_DB} and does not show {them}; a build of the channel `{}` does, and so does OpenCode started with OPENCODE_DB={absolute}",
                    l.channel.as_deref().unwrap_or("?")
                )?;
            }
            Kind::OpencodeStorage => writeln!(
                out,
                "{n} {sessions} only in {path}: OpenCode 1.2 and later read {DEFAULT_DB}, which imports storage/ once, when it is created; these were written after that import or skipped by it (a file it could not parse: `rewind diagnose {path} --select storage-file-damaged`)"
            )?,
            Kind::KiloDb | Kind::Claude | Kind::Codex | Kind::Gemini | Kind::Copilot => {}
        }
    }
    if let Some(db) = std::env::var_os("OPENCODE_DB").filter(|v| !v.is_empty()) {
        writeln!(
            out,
            "OPENCODE_DB is set here ({}): an OpenCode started from this environment reads that database instead",
            InputText::from(&db.to_string_lossy()).for_terminal()
        )?;
    } else if std::env::var_os("OPENCODE_DISABLE_CHANNEL_DB")
        .is_some_and(|v| v == "1" || v == "true")
    {
        writeln!(
            out,
            "OPENCODE_DISABLE_CHANNEL_DB is set here: an OpenCode started from this environment reads {DEFAULT_DB} whatever its channel"
        )?;
    }
    Ok(())
}

/// `rewind sessions DATA_FOLDER`.
pub fn run_folder(
    dir: &Path,
    options: &Options,
    format: HumanOrJson,
) -> Result<ExitStatus, RewindError> {
    let listings = folder_listings(dir, options);
    let mut out = Fitted::new(super::Out, human_width(format));
    match format {
        HumanOrJson::Json => {
            let stores: Vec<Value> = listings.iter().map(StoreListing::json).collect();
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(
                    json!({"folder": dir, "stores": stores, "which_store": WHICH_STORE}),
                ),
            )?;
            writeln!(out)?;
        }
        HumanOrJson::Human => {
            let shown = InputText::from(&dir.display().to_string()).for_terminal();
            writeln!(out, "OpenCode data folder {shown}")?;
            writeln!(out, "{}", fit(summary_table(&listings, false)))?;
            write_sessions(&mut out, &listings)?;
            writeln!(out)?;
            write_notes(&mut out, &listings)?;
            writeln!(out, "{WHICH_STORE}")?;
            writeln!(
                out,
                "`rewind sessions STORE` lists one store; `rewind diagnose STORE --session ID` shows the findings of one session"
            )?;
        }
    }
    Ok(ExitStatus::Clean)
}

/// Lists a folder of client transcripts (`rewind sessions ~/.claude/projects`).
pub fn run_transcripts(
    dir: &Path,
    options: &Options,
    format: HumanOrJson,
) -> Result<ExitStatus, RewindError> {
    let claude = crate::formats::claude_code::store::transcripts(dir);
    let gemini = crate::formats::gemini::store::sessions(dir);
    let copilot = crate::formats::copilot::store::sessions(dir);
    let listing = if claude.is_empty() && !gemini.is_empty() {
        transcripts("Gemini CLI sessions", dir, Kind::Gemini, &gemini, options)
    } else if claude.is_empty() && !copilot.is_empty() {
        transcripts(
            "Copilot CLI sessions",
            dir,
            Kind::Copilot,
            &copilot,
            options,
        )
    } else if claude.is_empty() {
        let files = crate::formats::codex::store::rollouts(dir);
        transcripts("Codex rollouts", dir, Kind::Codex, &files, options)
    } else {
        transcripts(
            "Claude Code transcripts",
            dir,
            Kind::Claude,
            &claude,
            options,
        )
    };
    let listings = [listing];
    let mut out = Fitted::new(super::Out, human_width(format));
    match format {
        HumanOrJson::Json => {
            let stores: Vec<Value> = listings.iter().map(StoreListing::json).collect();
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(json!({"folder": dir, "stores": stores})),
            )?;
            writeln!(out)?;
        }
        HumanOrJson::Human => {
            write_sessions(&mut out, &listings)?;
            writeln!(out)?;
            write_notes(&mut out, &listings)?;
            let shown = InputText::from(&dir.display().to_string()).for_terminal();
            writeln!(
                out,
                "`rewind diagnose {shown} --session ID` shows the findings of one session"
            )?;
        }
    }
    Ok(ExitStatus::Clean)
}

/// Kilo's databases in `dir`, each as one listing.
fn kilo_folder_listings(
    dir: &Path,
    label_via: Option<&str>,
    options: &Options,
) -> Vec<StoreListing> {
    opencode_data::kilo_stores_in(dir)
        .into_iter()
        .map(|store| {
            let channel = store.channel().map(str::to_owned);
            let read_by = match &channel {
                None => "Kilo releases (`kilo`); any build with KILO_DISABLE_CHANNEL_DB=1".into(),
                Some(c) => format!("Kilo builds of the channel `{c}`"),
            };
            let label = match label_via {
                Some(via) => format!("{} in {via}", store.name),
                None => store.name.clone(),
            };
            db_listing(label, store.path, Kind::KiloDb, channel, read_by, options)
        })
        .collect()
}

/// `rewind sessions KILO_DATA_FOLDER`: the Kilo databases in it.
pub fn run_kilo_folder(
    dir: &Path,
    options: &Options,
    format: HumanOrJson,
) -> Result<ExitStatus, RewindError> {
    let listings = kilo_folder_listings(dir, None, options);
    let mut out = Fitted::new(super::Out, human_width(format));
    match format {
        HumanOrJson::Json => {
            let stores: Vec<Value> = listings.iter().map(StoreListing::json).collect();
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(json!({"folder": dir, "stores": stores})),
            )?;
            writeln!(out)?;
        }
        HumanOrJson::Human => {
            let shown = InputText::from(&dir.display().to_string()).for_terminal();
            writeln!(out, "Kilo data folder {shown}")?;
            writeln!(out, "{}", fit(summary_table(&listings, false)))?;
            write_sessions(&mut out, &listings)?;
            writeln!(out)?;
            writeln!(
                out,
                "`rewind sessions STORE` lists one store; `rewind diagnose STORE --session ID` shows the findings of one session"
            )?;
        }
    }
    Ok(ExitStatus::Clean)
}

/// A place searched, and what was found there.
struct Searched {
    what: &'static str,
    path: PathBuf,
    /// Where the path came from (`$XDG_DATA_HOME`, `~`).
    via: String,
    found: bool,
}

/// The user's home folder: `HOME`, else `USERPROFILE` (Windows).
fn home() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    var("HOME")
        .or_else(|| var("USERPROFILE"))
        .map(PathBuf::from)
}

fn env_path(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v: &OsString| !v.is_empty())
        .map(PathBuf::from)
}

/// One database's sessions, under `label`.
/// A client's data folders (`name` under `$XDG_DATA_HOME`, then `~/.local/share`), each with
/// where it came from.
fn data_folders(home: Option<&Path>, name: &str) -> Vec<(PathBuf, String)> {
    let mut folders: Vec<(PathBuf, String)> = Vec::new();
    if let Some(xdg) = env_path("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        folders.push((xdg.join(name), format!("$XDG_DATA_HOME/{name}")));
    }
    if let Some(h) = home {
        let default = h.join(".local/share").join(name);
        if !folders.iter().any(|(p, _)| *p == default) {
            folders.push((default, format!("~/.local/share/{name}")));
        }
    }
    folders
}

/// The database the environment variable `var` names (a path, or a name in the client's first
/// data folder `data`), when no listing has it yet: searched, and listed when it exists.
/// `what` is how the search names it, its kind, and who reads it.
fn env_db(
    var: &str,
    (what, kind, read_by): (&'static str, Kind, &str),
    data: Option<&Path>,
    listings: &[StoreListing],
    searched: &mut Vec<Searched>,
    options: &Options,
) -> Option<StoreListing> {
    let value = std::env::var_os(var).filter(|v| !v.is_empty())?;
    let db = opencode_data::opencode_db_override(&value.to_string_lossy(), data?)?;
    if listings.iter().any(|l| l.path == db) {
        return None;
    }
    let found = db.is_file();
    searched.push(Searched {
        what,
        path: db.clone(),
        via: format!("${var}"),
        found,
    });
    found.then(|| db_listing(format!("${var}"), db, kind, None, read_by.into(), options))
}

fn db_listing(
    label: String,
    path: PathBuf,
    kind: Kind,
    channel: Option<String>,
    read_by: String,
    options: &Options,
) -> StoreListing {
    let empty = std::fs::metadata(&path).is_ok_and(|m| m.len() == 0);
    let listed = if empty {
        Ok(Listing::default())
    } else {
        collect(&path, options)
    };
    let (rows, store_findings, error) = match listed {
        Ok(l) => (l.rows, l.store_findings, None),
        Err(e) => (Vec::new(), Totals::default(), Some(e.message())),
    };
    StoreListing {
        label,
        path,
        kind,
        channel,
        read_by,
        rows: rows.into_iter().map(|r| (r, None)).collect(),
        store_findings,
        unreadable: Vec::new(),
        error,
        not_in_default: None,
    }
}

/// Kilo Code CLI's databases: its data folder as each environment would place it, and the one
/// `KILO_DB` names.
fn kilo_listings(
    home: Option<&Path>,
    options: &Options,
    searched: &mut Vec<Searched>,
) -> Vec<StoreListing> {
    let folders = data_folders(home, "kilo");
    let mut listings = Vec::new();
    for (dir, via) in &folders {
        let these = kilo_folder_listings(dir, (folders.len() > 1).then_some(via.as_str()), options);
        searched.push(Searched {
            what: "Kilo data folder",
            path: dir.clone(),
            via: via.clone(),
            found: !these.is_empty(),
        });
        listings.extend(these);
    }
    listings.extend(env_db(
        "KILO_DB",
        (
            "Kilo database",
            Kind::KiloDb,
            "Kilo started with this KILO_DB",
        ),
        folders.first().map(|(data, _)| data.as_path()),
        &listings,
        searched,
        options,
    ));
    listings
}

/// The sessions of every transcript, read on rayon's pool, in file order.
fn transcripts(
    label: &str,
    root: &Path,
    kind: Kind,
    files: &[PathBuf],
    options: &Options,
) -> StoreListing {
    let results: Vec<(PathBuf, Result<Listing, RewindError>)> = files
        .par_iter()
        .map(|f| (f.clone(), collect(f, options)))
        .collect();
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for (file, result) in results {
        match result {
            Ok(listing) => {
                let modified = std::fs::metadata(&file)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .and_then(|d| i64::try_from(d.as_millis()).ok());
                for mut r in listing.rows {
                    r.updated = r.updated.or(modified);
                    rows.push((r, Some(file.clone())));
                }
            }
            Err(e) => unreadable.push((file, e.message())),
        }
    }
    StoreListing {
        label: label.to_owned(),
        path: root.to_path_buf(),
        kind,
        channel: None,
        read_by: match kind {
            Kind::Claude => "Claude Code (`claude --resume`)".into(),
            Kind::Gemini => "Gemini CLI (`gemini --resume`)".into(),
            Kind::Copilot => "GitHub Copilot CLI (`copilot --resume`)".into(),
            _ => "Codex (`codex resume`)".into(),
        },
        rows,
        store_findings: Totals::default(),
        unreadable,
        error: None,
        not_in_default: None,
    }
}

/// `rewind sessions` with no store: the stores of this machine.
pub fn run_found(options: &Options, format: HumanOrJson) -> Result<ExitStatus, RewindError> {
    let home = home();
    let mut searched: Vec<Searched> = Vec::new();
    let mut listings: Vec<StoreListing> = Vec::new();

    // OpenCode's data folder, as each environment would place it.
    let data_folders = data_folders(home.as_deref(), "opencode");
    for (dir, via) in &data_folders {
        let found = opencode_data::stores_in(dir);
        searched.push(Searched {
            what: "OpenCode data folder",
            path: dir.clone(),
            via: via.clone(),
            found: !found.is_empty(),
        });
        let mut these = folder_listings(dir, options);
        if data_folders.len() > 1 {
            for l in &mut these {
                l.label = format!("{} in {via}", l.label);
            }
        }
        listings.extend(these);
    }
    // A database OPENCODE_DB names outside the data folders.
    listings.extend(env_db(
        "OPENCODE_DB",
        (
            "OpenCode database",
            Kind::OpencodeDb,
            "OpenCode started with this OPENCODE_DB",
        ),
        data_folders.first().map(|(data, _)| data.as_path()),
        &listings,
        &mut searched,
        options,
    ));

    listings.extend(kilo_listings(home.as_deref(), options, &mut searched));

    // Claude Code's transcripts.
    let claude = match env_path("CLAUDE_CONFIG_DIR") {
        Some(d) => Some((d.join("projects"), "$CLAUDE_CONFIG_DIR/projects")),
        None => home
            .as_ref()
            .map(|h| (h.join(".claude/projects"), "~/.claude/projects")),
    };
    if let Some((root, via)) = claude {
        let files = crate::formats::claude_code::store::transcripts(&root);
        searched.push(Searched {
            what: "Claude Code transcripts",
            path: root.clone(),
            via: via.into(),
            found: !files.is_empty(),
        });
        if !files.is_empty() {
            listings.push(transcripts(
                "Claude Code transcripts",
                &root,
                Kind::Claude,
                &files,
                options,
            ));
        }
    }

    // Codex's rollouts.
    let codex = match env_path("CODEX_HOME") {
        Some(d) => Some((d.join("sessions"), "$CODEX_HOME/sessions")),
        None => home
            .as_ref()
            .map(|h| (h.join(".codex/sessions"), "~/.codex/sessions")),
    };
    // Codex's thread index beside the rollouts: its counts, and how many disagreements.
    let codex_index = codex.as_ref().and_then(|(root, _)| {
        let home = root.parent()?;
        let db = home.join(crate::formats::codex::index::STATE_DB);
        db.is_file().then(|| {
            let facts = crate::formats::codex::index::compare(
                home,
                &db,
                &mut crate::source::SourceMap::new(),
            );
            (db, facts)
        })
    });
    if let Some((root, via)) = codex {
        let files = crate::formats::codex::store::rollouts(&root);
        searched.push(Searched {
            what: "Codex rollouts",
            path: root.clone(),
            via: via.into(),
            found: !files.is_empty(),
        });
        if !files.is_empty() {
            listings.push(transcripts(
                "Codex rollouts",
                &root,
                Kind::Codex,
                &files,
                options,
            ));
        }
    }

    // Gemini CLI's sessions.
    let gemini = match env_path("GEMINI_CLI_HOME") {
        Some(d) => Some((d.join(".gemini/tmp"), "$GEMINI_CLI_HOME/.gemini/tmp")),
        None => home
            .as_ref()
            .map(|h| (h.join(".gemini/tmp"), "~/.gemini/tmp")),
    };
    if let Some((root, via)) = gemini {
        let files = crate::formats::gemini::store::sessions(&root);
        searched.push(Searched {
            what: "Gemini CLI sessions",
            path: root.clone(),
            via: via.into(),
            found: !files.is_empty(),
        });
        if !files.is_empty() {
            listings.push(transcripts(
                "Gemini CLI sessions",
                &root,
                Kind::Gemini,
                &files,
                options,
            ));
        }
    }

    // Copilot CLI's sessions.
    let copilot = match env_path("COPILOT_HOME") {
        Some(d) => Some((d.join("session-state"), "$COPILOT_HOME/session-state")),
        None => home
            .as_ref()
            .map(|h| (h.join(".copilot/session-state"), "~/.copilot/session-state")),
    };
    if let Some((root, via)) = copilot {
        let files = crate::formats::copilot::store::sessions(&root);
        searched.push(Searched {
            what: "Copilot CLI sessions",
            path: root.clone(),
            via: via.into(),
            found: !files.is_empty(),
        });
        if !files.is_empty() {
            listings.push(transcripts(
                "Copilot CLI sessions",
                &root,
                Kind::Copilot,
                &files,
                options,
            ));
        }
    }

    let mut out = Fitted::new(super::Out, human_width(format));
    match format {
        HumanOrJson::Json => {
            let searched: Vec<Value> = searched
                .iter()
                .map(|s| json!({"what": s.what, "path": s.path, "via": s.via, "found": s.found}))
                .collect();
            let stores: Vec<Value> = listings.iter().map(StoreListing::json).collect();
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(json!({"searched": searched, "home": home, "stores": stores,
                    "codex_index": codex_index.as_ref().map(|(db, f)| json!({
                        "path": db, "threads_rows": f.rows, "rollout_files": f.rollouts,
                        "disagreements": f.problems.len()}))})),
            )?;
            writeln!(out)?;
        }
        HumanOrJson::Human => {
            if listings.is_empty() {
                writeln!(out, "no session store found on this machine")?;
            }
            writeln!(out, "searched:")?;
            for s in &searched {
                writeln!(
                    out,
                    "  {} {} ({}): {}",
                    s.what,
                    InputText::from(&s.path.display().to_string()).for_terminal(),
                    InputText::from(&s.via).for_terminal(),
                    if s.found { "found" } else { "nothing there" }
                )?;
            }
            if let Some((db, f)) = &codex_index {
                writeln!(
                    out,
                    "  Codex thread index {}: {} threads row{}, {} rollout file{}, {} disagreement{}{}",
                    InputText::from(&db.display().to_string()).for_terminal(),
                    f.rows,
                    if f.rows == 1 { "" } else { "s" },
                    f.rollouts,
                    if f.rollouts == 1 { "" } else { "s" },
                    f.problems.len(),
                    if f.problems.len() == 1 { "" } else { "s" },
                    if f.problems.is_empty() {
                        ""
                    } else {
                        " (`rewind diagnose` on its folder names them)"
                    }
                )?;
            }
            if home.is_none() {
                writeln!(
                    out,
                    "  (no home folder: HOME and USERPROFILE are unset, so ~/.local/share/opencode, ~/.local/share/kilo, ~/.claude, ~/.codex, ~/.gemini and ~/.copilot were not searched)"
                )?;
            }
            if listings.is_empty() {
                writeln!(
                    out,
                    "give a store to list it: `rewind sessions PATH` (an OpenCode or Kilo database, an OpenCode data folder, storage folder or export; a transcript)"
                )?;
                return Ok(ExitStatus::Clean);
            }
            writeln!(out, "{}", fit(summary_table(&listings, true)))?;
            write_sessions(&mut out, &listings)?;
            writeln!(out)?;
            write_notes(&mut out, &listings)?;
            if listings
                .iter()
                .any(|l| matches!(l.kind, Kind::OpencodeDb | Kind::OpencodeStorage))
            {
                writeln!(out, "{WHICH_STORE}")?;
            }
            writeln!(
                out,
                "`rewind diagnose STORE --session ID` shows the findings of one session"
            )?;
        }
    }
    Ok(ExitStatus::Clean)
}
