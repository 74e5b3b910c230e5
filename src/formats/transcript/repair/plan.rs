//! Planning a repair on the records themselves: the torn last line and the lines nothing can be
//! made of here; what to answer, drop or relink is each client's own (`claude_code/repair.rs`,
//! `codex/repair.rs`).

use std::collections::BTreeSet;

use crate::formats::{
    claude_code::repair as claude_code, codex::repair as codex, copilot::repair as copilot,
    gemini::repair as gemini,
};

use super::{Change, Client, Edit, Plan, Problem, split};

/// Plans the repair of the file's bytes, written by `client`.
pub(super) fn plan_bytes(bytes: &[u8], client: Client) -> Plan {
    let (lines, newline_at_end) = split(bytes);
    let mut plan = Plan {
        client,
        session_id: None,
        changes: Vec::new(),
        unfixable: Vec::new(),
        edits: Vec::new(),
        calls: BTreeSet::new(),
        unanswered_at_ms: None,
    };
    // Copilot CLI's line damage is its own to undo (`copilot/repair.rs`).
    if client == Client::Copilot {
        copilot::plan(&lines, newline_at_end, &mut plan);
        return plan;
    }
    if client == Client::Gemini && gemini::is_legacy(&lines) {
        plan.unfixable.extend(gemini::legacy(bytes));
        return plan;
    }
    let last = lines.len().checked_sub(1);
    let torn = last.filter(|&i| !newline_at_end && lines[i].value.is_none());
    for (i, l) in lines.iter().enumerate() {
        let blank = std::str::from_utf8(l.raw).is_ok_and(|t| t.trim().is_empty());
        if l.value.is_none() && !blank && Some(i) != torn {
            plan.unfixable.push(format!(
                "line {} is not JSON and is not the last line: rewind does not guess what it held",
                i + 1
            ));
        }
    }
    if let Some(i) = torn {
        plan.edits.push(Edit::Trim);
        plan.changes.push(Change {
            line: i as u64 + 1,
            problem: Problem::TornLastLine,
            call_id: None,
            change: format!(
                "trim the torn last line ({} bytes; they stay in the backup)",
                lines[i].raw.len()
            ),
        });
    }
    // The lines that stay, for the rest of the plan.
    let kept = torn.map_or(lines.len(), |t| t);
    // A whole last line without its newline needs one before anything is appended.
    let next_line = kept as u64 + 1;
    match client {
        Client::ClaudeCode => {
            let cut = torn.map_or(0, |t| lines[t].raw.len());
            let thinking = claude_code::changed_thinking(&bytes[..bytes.len() - cut]);
            claude_code::plan(&lines[..kept], next_line, &thinking, &mut plan);
        }
        Client::Codex => codex::plan(&lines[..kept], next_line, &mut plan),
        Client::Gemini => gemini::plan(&lines[..kept], next_line, &mut plan),
        Client::Copilot => {}
    }
    plan
}
