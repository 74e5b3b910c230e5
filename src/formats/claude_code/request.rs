//! The next request of a Claude Code session, rebuilt from its transcript's stored history the
//! way the version that wrote it does: consecutive messages of one role are one message (the
//! Messages API wants them alternating), and a `tool_use` that the next message does not answer
//! is left out (an assistant message left empty goes with it) — on resume the client branches
//! from the record before it, so the call is never sent. From 2.1.281 on, a `tool_use` that ends
//! the history unanswered (the client was killed while the tool ran) is kept instead: on resume
//! the client answers it with its interrupted `tool_result` and a synthetic reply (recorded with
//! the real clients: `tests/fixtures/matrix/claude-code/2.1.280` leaves the call out, `2.1.281`
//! sends it answered).
//!
//! Attachments, system reminders, instructions and tool definitions are not rebuilt: the request
//! holds the conversation's roles, block order and ids.

use crate::formats::transcript::request::rebuilt;
use crate::request::{Block, BlockKind, ModelMessage, ModelRequest, Provider, Role};
use crate::session::Analysis;

/// The first version that answers, on resume, a `tool_use` ending the history unanswered.
const ANSWERS_ON_RESUME: [u64; 3] = [2, 1, 281];

/// The request Claude Code sends next, when `analysis` is its transcript's.
pub fn next_request(analysis: &Analysis) -> Option<ModelRequest> {
    let facts = analysis.transcript.as_deref()?;
    let version = analysis.sessions.first().and_then(|s| s.version.as_deref());
    Some(rebuilt(
        analysis,
        Provider::Anthropic,
        rebuild(&facts.history, answers_on_resume(version)),
    ))
}

/// Whether Claude Code `version` answers an unanswered `tool_use` at the end of the history on
/// resume (an unknown version is taken for an older one: it leaves the call out).
pub fn answers_on_resume(version: Option<&str>) -> bool {
    let Some(version) = version else {
        return false;
    };
    let numbers: Option<Vec<u64>> = version
        .split(['-', '+'])
        .next()
        .unwrap_or_default()
        .split('.')
        .map(|n| n.parse().ok())
        .collect();
    numbers.is_some_and(|n| n.as_slice() >= ANSWERS_ON_RESUME.as_slice())
}

/// Merges runs of one role and drops unanswered `tool_use` blocks; with `answer_last`, the
/// calls of a last assistant message are answered as the client answers them on resume.
pub fn rebuild(history: &[ModelMessage], answer_last: bool) -> Vec<ModelMessage> {
    let mut merged: Vec<ModelMessage> = Vec::new();
    for m in history {
        match merged.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(m.content.iter().cloned()),
            _ => merged.push(m.clone()),
        }
    }
    if answer_last {
        answer_trailing_calls(&mut merged);
    }
    // The call ids each message answers, for its previous message's calls.
    let results: Vec<crate::FastSet<&str>> = merged
        .iter()
        .map(|m| m.content.iter().filter_map(Block::tool_result_id).collect())
        .collect();
    let answered = |i: usize, id: &str| results.get(i + 1).is_some_and(|r| r.contains(id));
    let keep: Vec<Vec<bool>> = merged
        .iter()
        .enumerate()
        .map(|(i, m)| {
            m.content
                .iter()
                .map(|b| b.tool_call_id().is_none_or(|id| answered(i, id)))
                .collect()
        })
        .collect();
    let mut out: Vec<ModelMessage> = Vec::new();
    for (m, keep) in merged.into_iter().zip(keep) {
        let content: Vec<Block> = m
            .content
            .into_iter()
            .zip(keep)
            .filter_map(|(b, k)| k.then_some(b))
            .collect();
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(content),
            _ => out.push(ModelMessage { content, ..m }),
        }
    }
    out
}

/// An interrupted `tool_result` for each call of a last assistant message, and the client's
/// synthetic reply after them ("No response requested.").
fn answer_trailing_calls(merged: &mut Vec<ModelMessage>) {
    let Some(last) = merged.last().filter(|m| m.role == Role::Assistant) else {
        return;
    };
    let results: Vec<Block> = last
        .content
        .iter()
        .filter_map(Block::tool_call_id)
        .map(|id| {
            Block::new(BlockKind::ToolResult {
                id: id.to_owned(),
                is_error: true,
            })
        })
        .collect();
    if results.is_empty() {
        return;
    }
    let synthetic = |role, content| ModelMessage {
        role,
        content,
        span: None,
        message_id: None,
    };
    merged.push(synthetic(Role::User, results));
    merged.push(synthetic(
        Role::Assistant,
        vec![Block::new(BlockKind::Text)],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::transcript::request::test_history::{call, msg};
    use crate::request::{BlockKind, Role};

    fn shape(ms: &[ModelMessage]) -> Vec<(Role, Vec<BlockKind>)> {
        ms.iter()
            .map(|m| (m.role, m.content.iter().map(|b| b.kind.clone()).collect()))
            .collect()
    }

    #[test]
    fn claude_code_drops_an_unanswered_tool_use() {
        let history = vec![
            msg(Role::User, vec![BlockKind::Text], "u1"),
            msg(Role::Assistant, vec![BlockKind::Text, call("t1")], "m1"),
            msg(Role::User, vec![BlockKind::Text], "u2"),
        ];
        assert_eq!(
            shape(&rebuild(&history, false)),
            vec![
                (Role::User, vec![BlockKind::Text]),
                (Role::Assistant, vec![BlockKind::Text]),
                (Role::User, vec![BlockKind::Text]),
            ]
        );
    }

    #[test]
    fn from_2_1_281_a_trailing_call_is_answered_and_a_middle_one_still_dropped() {
        let history = vec![
            msg(Role::User, vec![BlockKind::Text], "u1"),
            msg(Role::Assistant, vec![BlockKind::Text, call("t1")], "m1"),
            msg(Role::User, vec![BlockKind::Text], "u2"),
            msg(Role::Assistant, vec![BlockKind::Text, call("t2")], "m2"),
        ];
        let result = BlockKind::ToolResult {
            id: "t2".into(),
            is_error: true,
        };
        assert_eq!(
            shape(&rebuild(&history, true)),
            vec![
                (Role::User, vec![BlockKind::Text]),
                (Role::Assistant, vec![BlockKind::Text]),
                (Role::User, vec![BlockKind::Text]),
                (Role::Assistant, vec![BlockKind::Text, call("t2")]),
                (Role::User, vec![result]),
                (Role::Assistant, vec![BlockKind::Text]),
            ]
        );
        assert_eq!(shape(&rebuild(&history, false)).len(), 4);
    }

    #[test]
    fn the_versions_that_answer_on_resume() {
        for (v, answers) in [
            (Some("2.1.281"), true),
            (Some("2.1.332"), true),
            (Some("2.2.0"), true),
            (Some("3.0.0-beta.1"), true),
            (Some("2.1.280"), false),
            (Some("2.1.197"), false),
            (Some("2.0.77"), false),
            (Some("1.0.128"), false),
            (Some("x.y"), false),
            (None, false),
        ] {
            assert_eq!(answers_on_resume(v), answers, "{v:?}");
        }
    }
}
