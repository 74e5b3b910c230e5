//! `rewind repair STORE`: plan a fix for every fixable finding, print the plan, apply it.
//! A Claude Code transcript or a Codex rollout is repaired by [`crate::formats::transcript::repair`].

use std::io::Write;
use std::path::PathBuf;

use comfy_table::{Table, presets};
use serde_json::json;

use super::HumanOrJson as OutputFormat;
use super::diagnose::StoreArgs;
use crate::core::ExitStatus;
use crate::core::Format;
use crate::core::RewindError;
use crate::formats::opencode::repair::{self, SessionPlan};
use crate::ingest;
use crate::text::InputText;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An OpenCode database, an `opencode export` document, a legacy storage folder, a Claude
    /// Code transcript (`~/.claude/projects/…/<session>.jsonl`) or a Codex rollout
    /// (`~/.codex/sessions/…/rollout-*.jsonl`).
    #[arg(value_name = "STORE")]
    pub store: PathBuf,

    /// Print the plan and stop: nothing is written.
    #[arg(long)]
    pub dry_run: bool,

    /// Repair sessions even when OpenCode looks like it is writing them (their last message is
    /// open and was written less than 10 minutes ago, or they changed while rewind planned), or
    /// a transcript whose last call was written less than 10 minutes ago: only when no client is
    /// running.
    #[arg(long)]
    pub force: bool,

    /// File hidden sessions (`session-hidden`) under this project instead of the one OpenCode
    /// resolves for their folder. It must be a row of the database's `project` table.
    #[arg(long, value_name = "ID")]
    pub project: Option<String>,

    /// A folder that moved: give sessions whose folder is OLD, or inside it, the same place
    /// under NEW (repeatable). Only sessions `session-hidden` reports are changed.
    #[arg(long, value_name = "OLD=NEW", value_parser = parse_relink)]
    pub relink: Vec<(String, String)>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,

    #[command(flatten)]
    pub store_args: StoreArgs,
}

/// `OLD=NEW`, both non-empty.
fn parse_relink(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((old, new)) if !old.trim().is_empty() && !new.trim().is_empty() => {
            Ok((old.to_owned(), new.to_owned()))
        }
        _ => Err(format!(
            "`{s}` is not OLD=NEW (two folders: where the sessions' folder was, and where it is now)"
        )),
    }
}

fn table(plans: &[SessionPlan]) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_header(["session", "message", "part", "rule", "change"]);
    for c in plans.iter().flat_map(|p| &p.changes) {
        t.add_row([
            InputText::from(&c.session_id).for_terminal_lines(),
            InputText::from(if c.message_id.is_empty() {
                "-"
            } else {
                &c.message_id
            })
            .for_terminal_lines(),
            InputText::from(c.part_id.as_deref().unwrap_or("-")).for_terminal_lines(),
            c.rule.to_string(),
            InputText::from(&c.change).for_terminal_lines(),
        ]);
    }
    crate::report::layout::fit_table(t, crate::report::layout::width())
}

pub fn run(mut args: Args) -> Result<ExitStatus, RewindError> {
    if let Some(found) = super::transcript_sessions(&args.store, &args.store_args.sessions)? {
        let [one] = found.as_slice() else {
            return Err(RewindError::Usage(
                "`rewind repair` of a transcript folder repairs one session at a time: give one `--session ID`".into(),
            ));
        };
        args.store = one.clone();
    }
    let options = repair::Options {
        sessions: args.store_args.sessions,
        opencode_version: args.store_args.opencode_version,
        provider: args.store_args.provider,
        force: args.force,
        relink: repair::Relink {
            project: args.project,
            folders: args.relink,
        },
    };
    let path = &args.store;
    let shown = path.display().to_string();
    if ingest::input::is_one_shot(path) {
        return Err(RewindError::Usage(format!(
            "`{shown}` is standard input or a pipe: `rewind repair` changes a store in place, so give the database or export file itself (nothing was changed)"
        )));
    }
    // Human output's lines wrap to the terminal (see `report::layout`); JSON passes untouched.
    let width = (args.format == OutputFormat::Human).then(crate::report::layout::width);
    let mut out = crate::report::layout::Fitted::new(super::Out, width);
    match crate::formats::recognize::detect(path)? {
        Format::OpencodeDb => {
            let outcome =
                crate::formats::opencode::repair::db::repair(path, &options, args.dry_run)
                    .map_err(|e| RewindError::Listed {
                        message: format!("`{shown}`: {e}"),
                        items: e.items().to_vec(),
                    })?;
            db_report(&mut out, &shown, args.format, args.dry_run, &outcome)?;
            Ok(ExitStatus::Clean)
        }
        Format::OpencodeExport => {
            let outcome =
                crate::formats::opencode::repair::export::repair(path, &options, args.dry_run)
                    .map_err(|e| RewindError::Usage(format!("`{shown}`: {e}")))?;
            let plans = [outcome.plan];
            match args.format {
                OutputFormat::Json => {
                    crate::report::safe_json::to_writer_pretty(
                        &mut out,
                        &super::envelope(
                            json!({"path": shown, "dry_run": args.dry_run, "plan": plans[0].changes,
                                "unfixable": plans[0].unfixable, "output": outcome.output}),
                        ),
                    )?;
                    writeln!(out)?;
                }
                OutputFormat::Human => {
                    if plans[0].changes.is_empty() {
                        writeln!(
                            out,
                            "{}: nothing to repair",
                            InputText::from(&shown).for_terminal()
                        )?;
                    } else {
                        writeln!(out, "{}", table(&plans))?;
                    }
                    for u in &plans[0].unfixable {
                        writeln!(out, "not repaired: {}", InputText::from(u).for_terminal())?;
                    }
                    if let Some(o) = &outcome.output {
                        writeln!(
                            out,
                            "wrote the repaired copy to {}\nOpenCode's import skips ids that already exist: delete the session first (`opencode session delete {}`), then `opencode import {}`",
                            InputText::from(&o.display().to_string()).for_terminal(),
                            InputText::from(&crate::text::shell_quote(&plans[0].session_id))
                                .for_terminal(),
                            InputText::from(&crate::text::shell_quote(&o.display().to_string()))
                                .for_terminal()
                        )?;
                    } else if args.dry_run {
                        writeln!(out, "dry run: nothing was written")?;
                    }
                }
            }
            Ok(ExitStatus::Clean)
        }
        Format::OpencodeStorage => super::repair_storage::run(&super::repair_storage::Args {
            store: path,
            force: args.force,
            dry_run: args.dry_run,
            format: args.format,
        }),
        format @ (Format::ClaudeTranscript
        | Format::CodexRollout
        | Format::GeminiSession
        | Format::CopilotSession) => {
            let outcome =
                crate::formats::transcript::repair::repair(path, format, args.dry_run, args.force)
                    .map_err(|e| RewindError::Usage(format!("`{shown}`: {e}")))?;
            transcript_report(&mut out, &shown, args.format, args.dry_run, &outcome)?;
            Ok(ExitStatus::Clean)
        }
        Format::CodexState => {
            let outcome =
                crate::formats::codex::index_repair::repair(path, args.dry_run, args.force)
                    .map_err(|e| RewindError::Usage(format!("`{shown}`: {e}")))?;
            index_report(&mut out, &shown, args.format, args.dry_run, &outcome)?;
            Ok(ExitStatus::Clean)
        }
        other => Err(RewindError::CannotRepair {
            path: path.clone(),
            format: other,
        }),
    }
}

/// What the repair of a Codex thread index planned and did, as `format`.
fn index_report(
    out: &mut impl Write,
    shown: &str,
    format: OutputFormat,
    dry_run: bool,
    outcome: &crate::formats::codex::index_repair::Outcome,
) -> Result<(), RewindError> {
    match format {
        OutputFormat::Json => {
            crate::report::safe_json::to_writer_pretty(
                &mut *out,
                &super::envelope(
                    json!({"path": shown, "dry_run": dry_run, "plan": outcome.changes,
                    "unfixable": outcome.unfixable, "backup": outcome.backup}),
                ),
            )?;
            writeln!(out)?;
        }
        OutputFormat::Human => {
            if outcome.changes.is_empty() {
                writeln!(
                    out,
                    "{}: nothing to repair",
                    InputText::from(shown).for_terminal()
                )?;
            }
            for c in &outcome.changes {
                writeln!(
                    out,
                    "thread {}: {} ({})",
                    InputText::from(&c.thread_id).for_terminal(),
                    InputText::from(&c.change).for_terminal(),
                    c.rule
                )?;
            }
            for u in &outcome.unfixable {
                writeln!(out, "not repaired: {}", InputText::from(u).for_terminal())?;
            }
            if let Some(b) = &outcome.backup {
                writeln!(
                    out,
                    "backup: {}",
                    InputText::from(&b.display().to_string()).for_terminal()
                )?;
            } else if dry_run && !outcome.changes.is_empty() {
                writeln!(out, "dry run: nothing was written")?;
            }
        }
    }
    Ok(())
}

/// What the repair of an OpenCode database planned and did, as `format`.
fn db_report(
    out: &mut impl Write,
    shown: &str,
    format: OutputFormat,
    dry_run: bool,
    outcome: &crate::formats::opencode::repair::db::Outcome,
) -> Result<(), RewindError> {
    let unfixable: Vec<&String> = outcome.plans.iter().flat_map(|p| &p.unfixable).collect();
    match format {
        OutputFormat::Json => {
            crate::report::safe_json::to_writer_pretty(
                &mut *out,
                &super::envelope(
                    json!({"path": shown, "dry_run": dry_run, "plan": outcome.plans.iter().flat_map(|p| &p.changes).collect::<Vec<_>>(),
                        "unfixable": unfixable, "caveats": outcome.caveats, "applied": outcome.applied, "backup": outcome.backup}),
                ),
            )?;
            writeln!(out)?;
        }
        OutputFormat::Human => {
            if outcome.changes() == 0 {
                writeln!(
                    out,
                    "{}: nothing to repair",
                    InputText::from(shown).for_terminal()
                )?;
            } else {
                writeln!(out, "{}", table(&outcome.plans))?;
            }
            for u in &unfixable {
                writeln!(out, "not repaired: {}", InputText::from(*u).for_terminal())?;
            }
            for c in &outcome.caveats {
                writeln!(out, "caveat: {}", InputText::from(c).for_terminal())?;
            }
            if dry_run {
                writeln!(
                    out,
                    "dry run: nothing was written ({} changes planned)",
                    outcome.changes()
                )?;
            } else if outcome.applied {
                writeln!(
                    out,
                    "applied {} changes in one transaction; backup of the original: {}",
                    outcome.changes(),
                    outcome
                        .backup
                        .as_ref()
                        .map(|b| b.display().to_string())
                        .unwrap_or_default()
                )?;
            }
        }
    }
    Ok(())
}

fn transcript_report(
    out: &mut impl Write,
    shown: &str,
    format: OutputFormat,
    dry_run: bool,
    outcome: &crate::formats::transcript::repair::Outcome,
) -> Result<(), RewindError> {
    let plan = &outcome.plan;
    match format {
        OutputFormat::Json => {
            crate::report::safe_json::to_writer_pretty(
                &mut *out,
                &super::envelope(
                    json!({"path": shown, "dry_run": dry_run, "client": plan.client, "session": plan.session_id,
                        "plan": plan.changes, "unfixable": plan.unfixable, "applied": outcome.applied,
                        "backup": outcome.backup, "bytes_before": outcome.bytes_before, "bytes_after": outcome.bytes_after}),
                ),
            )?;
            writeln!(out)?;
        }
        OutputFormat::Human => {
            if plan.changes.is_empty() {
                writeln!(
                    out,
                    "{}: nothing to repair",
                    InputText::from(shown).for_terminal()
                )?;
            } else {
                let mut t = Table::new();
                t.load_preset(presets::UTF8_FULL_CONDENSED);
                t.set_header(["line", "problem", "change"]);
                for c in &plan.changes {
                    t.add_row([
                        c.line.to_string(),
                        c.problem.to_string(),
                        InputText::from(&c.change).for_terminal_lines(),
                    ]);
                }
                let width = crate::report::layout::width();
                writeln!(out, "{}", crate::report::layout::fit_table(t, width))?;
            }
            for u in &plan.unfixable {
                writeln!(out, "not repaired: {}", InputText::from(u).for_terminal())?;
            }
            if dry_run {
                writeln!(
                    out,
                    "dry run: nothing was written ({} changes planned)",
                    plan.changes.len()
                )?;
            } else if outcome.applied {
                writeln!(
                    out,
                    "applied {} changes ({} -> {} bytes; the new file was diagnosed before it replaced the old one)\nbackup of the original: {}",
                    plan.changes.len(),
                    outcome.bytes_before,
                    outcome.bytes_after.unwrap_or_default(),
                    outcome
                        .backup
                        .as_ref()
                        .map(|b| b.display().to_string())
                        .unwrap_or_default()
                )?;
            }
        }
    }
    Ok(())
}
