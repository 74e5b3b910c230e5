use serde_json::json;

use super::fix::{Fix, FixContext, marker};
use super::Check;
use super::step_merged::with_request_view;
use crate::diagnostic::{Finding, Ids};
use crate::model::{PartBody, REPAIR_MARKER};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports text parts whose text is empty (or only whitespace).
    ///
    /// ## Why it matters
    /// Cancelling mid-response, or a `text-start` persisted before any text arrived, leaves a
    /// `{"type":"text","text":""}` part (opencode#16220, #29647). Providers reject empty text
    /// blocks, so versions that replay it send a request that fails on every later prompt
    /// ("permanently bricking the session"); the UI shows a blank message.
    ///
    /// ## Example
    /// ```text
    /// // part prt_…
    /// { "type": "text", "text": "" }
    /// ```
    ///
    /// ## How to fix
    /// `rewind repair` replaces the empty text with a short placeholder (`[empty]`) and records
    /// the original in `metadata.rewind`. By hand: `UPDATE part SET data = json_set(data,
    /// '$.text', '[aborted]') WHERE id = '…'`, with OpenCode closed and a backup made.
    pub struct EmptyTextPart {
        name: "empty-text-part",
        severity: Warning,
        summary: "A text part has empty text: providers reject the empty block",
        fix: "the placeholder text `[empty]`; the original kept in `metadata.rewind`",
    }
}

/// The text given to an empty text part.
pub const PLACEHOLDER_TEXT: &str = "[empty]";

impl Check for EmptyTextPart {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        let part_id = f.ids.part_id.as_deref().unwrap_or_default();
        let data = ctx.raw_part(part_id).map(|mut v| {
            if let Some(o) = v.as_object_mut() {
                let original = o.get("text").cloned().unwrap_or(serde_json::Value::Null);
                o.insert("text".into(), json!(PLACEHOLDER_TEXT));
                let meta = o.entry("metadata").or_insert_with(|| json!({}));
                if let Some(m) = meta.as_object_mut() {
                    m.insert(
                        REPAIR_MARKER.into(),
                        marker(Self::RULE, json!({ "text": original })),
                    );
                }
            }
            v
        });
        ctx.update_part(f, data, format!("text \"\" → \"{PLACEHOLDER_TEXT}\""))
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for (session, message, part) in analysis.parts() {
            let PartBody::Text(t) = &part.part.body else {
                continue;
            };
            let repaired = t
                .metadata
                .as_ref()
                .is_some_and(|m| m.contains_key(REPAIR_MARKER));
            if !t.text.trim().is_empty() || repaired {
                continue;
            }
            // A later step of the session finished: the requests that carried this part went
            // through, so the provider (or the agent's conversion) accepted it.
            let harmless = session.messages.iter().any(|m| {
                m.id > message.id
                    && m.parts
                        .iter()
                        .any(|p| matches!(p.part.body, PartBody::StepFinish(_)))
            });
            if harmless {
                continue;
            }
            let Some(obs) = part.last() else {
                continue;
            };
            let f = Self::META
                .finding(format!(
                    "text part {} of message {} is empty",
                    part.part.id, message.id
                ))
                .at(obs.span.head(), "this text part has no text")
                .help(with_request_view(
                    "an empty text block is rejected by providers; `rewind repair` gives it a short placeholder text",
                    analysis.format,
                    &session.id,
                ));
            out.push(
                f.ids(
                    Ids::default()
                        .session(session.id.clone())
                        .message(message.id.clone())
                        .part(part.part.id.clone()),
                ),
            );
        }
    }
}
