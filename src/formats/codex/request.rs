//! The next request of a Codex session, rebuilt from its rollout's stored history the way Codex
//! 0.169.0 does it: the stored items in order (from the newest compaction's replacement history
//! on); a call with no output gets a synthetic output ("aborted") right after it, which is not
//! written to the rollout, and an output whose call is nowhere in the history is left out
//! (`context_manager::normalize`: `ensure_call_outputs_present`, then `remove_orphan_outputs`,
//! which logs "Orphan function call output").
//!
//! Instructions and tool definitions are not rebuilt: the request holds the conversation's
//! roles, item order and ids.

use crate::formats::transcript::request::rebuilt;
use crate::request::{Block, BlockKind, ModelMessage, ModelRequest, Provider, Role};
use crate::session::Analysis;

/// The request Codex sends next, when `analysis` is its rollout's.
pub fn next_request(analysis: &Analysis) -> Option<ModelRequest> {
    let facts = analysis.transcript.as_deref()?;
    Some(rebuilt(analysis, Provider::OpenAi, rebuild(&facts.history)))
}

/// The items in order, a synthetic "aborted" output after each call that has none, and
/// no output whose call is not in the history.
pub fn rebuild(history: &[ModelMessage]) -> Vec<ModelMessage> {
    let calls: std::collections::HashSet<&str> = history
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(Block::tool_call_id)
        .collect();
    // The last message holding an output for each call id (a search of the rest of the history
    // per call was quadratic in a long rollout).
    let mut last_output: crate::FastMap<&str, usize> = crate::FastMap::default();
    for (i, m) in history.iter().enumerate() {
        for id in m.content.iter().filter_map(Block::tool_result_id) {
            last_output.insert(id, i);
        }
    }
    let mut out = Vec::with_capacity(history.len());
    for (i, m) in history.iter().enumerate() {
        let mut m = m.clone();
        m.content
            .retain(|b| b.tool_result_id().is_none_or(|id| calls.contains(id)));
        if m.content.is_empty() {
            continue;
        }
        let made: Vec<String> = m
            .content
            .iter()
            .filter_map(Block::tool_call_id)
            .map(str::to_owned)
            .collect();
        out.push(m);
        for id in &made {
            let id = id.as_str();
            let answered = last_output.get(id).is_some_and(|&last| last > i);
            if !answered {
                out.push(ModelMessage {
                    role: Role::Tool,
                    content: vec![Block::new(BlockKind::ToolResult {
                        id: id.to_owned(),
                        is_error: false,
                    })],
                    span: None,
                    message_id: None,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::transcript::request::test_history::{call, msg};

    #[test]
    fn codex_answers_an_unanswered_call_right_after_it() {
        let history = vec![
            msg(Role::User, vec![BlockKind::Text], "u1"),
            msg(Role::Assistant, vec![call("c1")], "fc1"),
            msg(Role::User, vec![BlockKind::Text], "u2"),
        ];
        let out = rebuild(&history);
        assert_eq!(out.len(), 4);
        assert_eq!(out[2].content[0].tool_result_id(), Some("c1"));
        assert_eq!(out[2].role, Role::Tool);
    }

    #[test]
    fn codex_leaves_out_an_output_whose_call_is_gone() {
        let history = vec![
            msg(Role::User, vec![BlockKind::Text], "u1"),
            msg(
                Role::Tool,
                vec![BlockKind::ToolResult {
                    id: "gone".into(),
                    is_error: false,
                }],
                "fco1",
            ),
            msg(Role::Assistant, vec![BlockKind::Text], "a1"),
        ];
        let out = rebuild(&history);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|m| m.role != Role::Tool));
    }
}
