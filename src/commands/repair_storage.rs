//! `rewind repair STORAGE` for OpenCode's legacy JSON storage folder: damaged files are moved
//! aside into a quarantine folder (see `crate::formats::opencode::repair::storage`).

use std::io::Write;

use comfy_table::{Table, presets};
use serde_json::json;

use super::HumanOrJson as OutputFormat;
use crate::core::ExitStatus;
use crate::core::RewindError;
use crate::formats::opencode::repair::storage;
use crate::text::InputText;
use std::path::Path;

/// What `rewind repair` was asked, for a storage folder.
pub struct Args<'a> {
    pub store: &'a Path,
    pub force: bool,
    pub dry_run: bool,
    pub format: OutputFormat,
}

pub fn run(args: &Args<'_>) -> Result<ExitStatus, RewindError> {
    let shown = args.store.display().to_string();
    let outcome = storage::repair(args.store, args.force, args.dry_run)
        .map_err(|e| RewindError::Usage(format!("`{shown}`: {e}")))?;
    // Human output's lines wrap to the terminal (see `report::layout`); JSON passes untouched.
    let width = (args.format == OutputFormat::Human).then(crate::report::layout::width);
    let mut out = crate::report::layout::Fitted::new(super::Out, width);
    match args.format {
        OutputFormat::Json => {
            crate::report::safe_json::to_writer_pretty(
                &mut out,
                &super::envelope(
                    json!({"path": shown, "storage": outcome.root, "dry_run": args.dry_run,
                        "quarantine": outcome.quarantine, "moves": outcome.moves,
                        "not_repaired": outcome.left, "applied": outcome.applied,
                        "verified": outcome.sessions_after.is_some(),
                        "sessions_after": outcome.sessions_after}),
                ),
            )?;
            writeln!(out)?;
        }
        OutputFormat::Human => {
            let root = outcome.root.display().to_string();
            if outcome.moves.is_empty() && outcome.left.is_empty() {
                writeln!(
                    out,
                    "{}: nothing to repair (every file of the storage folder parses)",
                    InputText::from(&root).for_terminal()
                )?;
                return Ok(ExitStatus::Clean);
            }
            if !outcome.moves.is_empty() {
                let mut t = Table::new();
                t.load_preset(presets::UTF8_FULL_CONDENSED);
                t.set_header(["file (under the storage folder)", "kind", "what is wrong"]);
                for m in &outcome.moves {
                    t.add_row([
                        InputText::from(&m.file).for_terminal_lines(),
                        m.kind.to_owned(),
                        InputText::from(&m.damage).for_terminal_lines(),
                    ]);
                }
                let width = crate::report::layout::width();
                writeln!(out, "{}", crate::report::layout::fit_table(t, width))?;
            }
            for l in &outcome.left {
                writeln!(
                    out,
                    "not repaired: {}: {}",
                    InputText::from(&l.file).for_terminal(),
                    InputText::from(&l.why).for_terminal()
                )?;
            }
            let quarantine =
                InputText::from(&outcome.quarantine.display().to_string()).for_terminal();
            let n = outcome.moves.len();
            let files = if n == 1 { "file" } else { "files" };
            if args.dry_run {
                writeln!(
                    out,
                    "dry run: nothing was moved ({n} damaged {files} would move from {} into {quarantine}, keeping their paths)",
                    InputText::from(&root).for_terminal()
                )?;
            } else if outcome.applied {
                writeln!(
                    out,
                    "moved {n} damaged {files} from {} into {quarantine}, keeping their paths (nothing was deleted; {} there says how to put them back)",
                    InputText::from(&root).for_terminal(),
                    storage::NOTE
                )?;
                if let Some(sessions) = outcome.sessions_after {
                    writeln!(
                        out,
                        "verified: no moved file is left in the storage folder, each is in the quarantine whole, and the folder reads cleanly ({sessions} session{})",
                        if sessions == 1 { "" } else { "s" }
                    )?;
                }
            }
        }
    }
    Ok(ExitStatus::Clean)
}
