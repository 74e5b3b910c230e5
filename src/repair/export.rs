//! Repairing an `opencode export` document: a repaired copy is written next to it (the original
//! is never overwritten).
//!
//! OpenCode's `import` skips messages and parts whose ids already exist, so importing the copy
//! over the broken session changes nothing: delete the session first
//! (`opencode session delete ID`), then `opencode import COPY`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Edit, Options, SessionPlan, plan, verify};
use crate::checks;
use crate::ingest::{Format, opencode_export};
use crate::reconstruct::opencode as rebuild;
use crate::replay::opencode::{Render, replay};
use crate::source::SourceMap;

/// What an export repair did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Outcome {
    pub plan: SessionPlan,
    /// The repaired copy, when one was written.
    pub output: Option<PathBuf>,
}

/// `session.json` → `session.repaired.json` (then `.repaired-1.json`, …: never an existing file).
pub fn output_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let mut n = 0;
    loop {
        let name = if n == 0 {
            format!("{stem}.repaired.json")
        } else {
            format!("{stem}.repaired-{n}.json")
        };
        let p = path.with_file_name(name);
        if !p.exists() {
            return p;
        }
        n += 1;
    }
}

fn diagnose(
    text: &str,
    options: &Options,
) -> Result<
    (
        crate::ingest::stored::StoredSession,
        Vec<crate::diagnostic::Finding>,
        crate::session::Analysis,
    ),
    String,
> {
    let mut sources = SourceMap::new();
    let file = sources.add_file(Path::new("export"));
    let stored = opencode_export::load(text, file).map_err(|e| e.to_string())?;
    let mut a = replay(
        stored.clone(),
        Format::OpencodeExport,
        file,
        &Render::Placeholder(file),
        &mut sources,
    );
    rebuild::rebuild(
        &mut a,
        &options.rebuild_options(stored.version.as_deref(), None),
    );
    let findings = checks::run(&a, &|_| true);
    Ok((stored, findings, a))
}

/// Plans the repair of the export at `path`, and unless `dry_run` writes the repaired copy.
pub fn repair(path: &Path, options: &Options, dry_run: bool) -> Result<Outcome, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (stored, before, analysis) = diagnose(&text, options)?;
    let plan = plan(&stored, &analysis, &before, &options.relink);
    if dry_run || plan.changes.is_empty() {
        return Ok(Outcome { plan, output: None });
    }
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let messages = doc
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .ok_or("no `messages` array")?;
    for change in &plan.changes {
        let Some(m) = messages
            .iter_mut()
            .find(|m| m["info"]["id"] == change.message_id.as_str())
        else {
            continue;
        };
        match &change.edit {
            Edit::UpdateMessage { data } => m["info"] = data.clone(),
            Edit::UpdatePart { data } => {
                if let Some(p) = m["parts"].as_array_mut().and_then(|ps| {
                    ps.iter_mut()
                        .find(|p| p["id"] == change.part_id.as_deref().unwrap_or_default())
                }) {
                    *p = data.clone();
                }
            }
            Edit::DeletePart => {
                if let Some(parts) = m["parts"].as_array_mut() {
                    parts.retain(|p| p["id"] != change.part_id.as_deref().unwrap_or_default());
                }
            }
            // An export has no project rows, so `session-hidden` plans nothing for it; and
            // `opencode import` files the session under the importing folder's project anyway.
            Edit::UpdateSession { .. } => {}
            Edit::InsertPart { data } => {
                let id = change.part_id.clone().unwrap_or_default();
                let mut part = json!({"id": id, "sessionID": change.session_id, "messageID": change.message_id});
                if let (Some(o), Some(d)) = (part.as_object_mut(), data.as_object()) {
                    o.extend(d.clone());
                }
                if let Some(parts) = m["parts"].as_array_mut() {
                    let at = parts
                        .iter()
                        .position(|p| p["id"].as_str().is_some_and(|x| x > id.as_str()))
                        .unwrap_or(parts.len());
                    parts.insert(at, part);
                }
            }
        }
    }
    let repaired = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    let (_, after, _) = diagnose(&repaired, options)?;
    verify(&before, &after, &plan.fixes)?;
    let output = output_path(path);
    std::fs::write(&output, repaired + "\n").map_err(|e| e.to_string())?;
    Ok(Outcome {
        plan,
        output: Some(output),
    })
}
