//! The pairing rules providers enforce on a request, and the exact errors they answer.
//!
//! Anthropic (`transcripts-and-ci.md` §1.1, `opencode-storage.md` §2.6):
//! * every `tool_use` of an assistant message must be answered by `tool_result` blocks at the
//!   start of the next message; content after a `tool_use` in the same assistant message breaks
//!   this (the recorded 400 of OpenCode's `rejects-malformed-assistant-tool-order` fixture);
//! * a `tool_result` must answer a `tool_use` of the previous assistant message;
//! * with extended thinking on, an assistant message with `tool_use` must start with thinking;
//! * a `tool_use` id is used once in the whole request (`messages.N.content.M` is the second).
//!
//! OpenAI: every function call needs an output with the same `call_id`, and every output a call.
//!
//! Google (the Gemini API's `contents`): a model turn's `functionCall` parts are answered by the
//! user turn right after it, one `functionResponse` part per call; a `functionResponse` answers
//! a call of the model turn before it. The errors are the API's own words (its known pairing
//! errors; which one it answers for a given history was not checked against the API).
//!
//! The `messages.N` index Anthropic reports for a missing result is the index of the message that
//! should have held it (the one after the assistant message): that is what the recorded 400
//! shows for an assistant message at index 0 (`messages.1`).

use crate::FastSet;
use crate::request::{BlockKind, ModelMessage, ModelRequest, Provider, Role};
use crate::source::Span;

/// Which rule a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A call not answered (right after it, for Anthropic).
    MissingResult,
    /// A result that answers no call (of the previous message, for Anthropic).
    OrphanResult,
    /// With extended thinking on, an assistant message using tools does not start with thinking.
    ThinkingFirst,
    /// A call id that an earlier call of the request already has (Anthropic).
    DuplicateCallId,
    /// The latest assistant message changes a signed thinking response (found by
    /// `thinking-modified`, which compares it with the transcript; never by [`check`]).
    ThinkingModified,
}

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The provider's error text, verbatim.
    pub error: String,
    /// What is wrong, in words.
    pub explanation: String,
    /// Index of the offending message in the request.
    pub message_index: usize,
    /// The tool call ids involved.
    pub ids: Vec<String>,
    /// Where it is: the offending block, else the message, else the request.
    pub span: Option<Span>,
    /// Stored message and part it comes from, when rebuilt from a session.
    pub message_id: Option<String>,
    pub part_id: Option<String>,
}

/// Checks a request against its provider's rules.
pub fn check(req: &ModelRequest) -> Vec<Violation> {
    match req.provider {
        Provider::Anthropic => anthropic(req),
        Provider::OpenAi => openai(req),
        Provider::Google => google(req),
    }
}

/// The Gemini API's rules: each model turn's calls are answered by `functionResponse` parts of
/// the user turn right after it, and a response answers a call of the model turn before it.
/// Messages are contents (consecutive turns of one role already merged, as Gemini CLI sends
/// them). A call answered twice is not judged: what the API answers to it is not verified.
pub fn google(req: &ModelRequest) -> Vec<Violation> {
    let msgs = &req.messages;
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let prev_calls: FastSet<&str> = i
            .checked_sub(1)
            .and_then(|p| msgs.get(p))
            .filter(|p| p.role == Role::Assistant)
            .map(|p| p.content.iter().filter_map(|b| b.tool_call_id()).collect())
            .unwrap_or_default();
        if m.role == Role::Assistant {
            let next = msgs.get(i + 1).filter(|n| is_results_message(n));
            let answered: FastSet<&str> = next
                .map(|n| {
                    n.content
                        .iter()
                        .filter_map(|b| b.tool_result_id())
                        .collect()
                })
                .unwrap_or_default();
            let missing: Vec<(usize, &str)> = m
                .content
                .iter()
                .enumerate()
                .filter_map(|(n, b)| b.tool_call_id().map(|id| (n, id)))
                .filter(|(_, id)| !answered.contains(id))
                .collect();
            let Some(&(k, _)) = missing.first() else {
                continue;
            };
            let why = match msgs.get(i + 1) {
                None => "it is the last turn".to_owned(),
                Some(n) if !is_results_message(n) => {
                    format!("turn {} is another model turn", i + 1)
                }
                Some(_) => format!("turn {} has no `functionResponse` for them", i + 1),
            };
            let error = if answered.is_empty() {
                "Please ensure that function response turn comes immediately after a function call turn."
            } else {
                "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
            };
            out.push(Violation {
                kind: ViolationKind::MissingResult,
                error: error.to_owned(),
                explanation: format!(
                    "model turn {i} makes function calls that are never answered: {why}"
                ),
                message_index: i,
                ids: missing.iter().map(|(_, id)| (*id).to_owned()).collect(),
                span: m.content[k].span.or(m.span),
                message_id: m.message_id.clone(),
                part_id: m.content[k].part_id.clone(),
            });
        } else if is_results_message(m) {
            for b in &m.content {
                let Some(id) = b.tool_result_id() else {
                    continue;
                };
                if prev_calls.contains(&id) {
                    continue;
                }
                out.push(Violation {
                    kind: ViolationKind::OrphanResult,
                    error: "Please ensure that function response turn comes immediately after a function call turn.".to_owned(),
                    explanation: format!(
                        "turn {i} answers function call {id}, which the model turn before it does not make"
                    ),
                    message_index: i,
                    ids: vec![id.to_owned()],
                    span: b.span.or(m.span),
                    message_id: m.message_id.clone(),
                    part_id: b.part_id.clone(),
                });
            }
        }
    }
    out
}

fn is_results_message(m: &ModelMessage) -> bool {
    matches!(m.role, Role::User | Role::Tool)
}

/// Anthropic's rules, on messages merged the way the API merges consecutive same-role turns.
pub fn anthropic(req: &ModelRequest) -> Vec<Violation> {
    let msgs = &req.messages;
    let mut out = Vec::new();
    // Where each call id was first used.
    let mut seen: crate::FastMap<&str, usize> = crate::FastMap::default();
    for (i, m) in msgs.iter().enumerate() {
        match m.role {
            Role::Assistant => {
                for (k, b) in m.content.iter().enumerate() {
                    let Some(id) = b.tool_call_id() else {
                        continue;
                    };
                    let Some(&first) = seen.get(id) else {
                        seen.insert(id, i);
                        continue;
                    };
                    out.push(Violation {
                        kind: ViolationKind::DuplicateCallId,
                        error: format!("messages.{i}.content.{k}: `tool_use` ids must be unique"),
                        explanation: format!(
                            "assistant message {i} calls a tool with id {id}, which message {first} already used"
                        ),
                        message_index: i,
                        ids: vec![id.to_owned()],
                        span: b.span.or(m.span),
                        message_id: m.message_id.clone(),
                        part_id: b.part_id.clone(),
                    });
                }
                let calls: Vec<(usize, &str)> = m
                    .content
                    .iter()
                    .enumerate()
                    .filter_map(|(k, b)| b.tool_call_id().map(|id| (k, id)))
                    .collect();
                let Some(&(first_call, first_id)) = calls.first() else {
                    continue;
                };
                // Thinking first.
                if req.thinking
                    && !matches!(
                        m.content.first().map(|b| &b.kind),
                        Some(BlockKind::Reasoning)
                    )
                {
                    let found = match m.content.first().map(|b| &b.kind) {
                        Some(BlockKind::ToolCall { .. }) => "tool_use",
                        Some(BlockKind::Text) => "text",
                        _ => "another block",
                    };
                    out.push(Violation {
                        kind: ViolationKind::ThinkingFirst,
                        error: format!(
                            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`"
                        ),
                        explanation: format!(
                            "with extended thinking on, assistant message {i} uses a tool but does not start with a thinking block"
                        ),
                        message_index: i,
                        ids: vec![first_id.to_owned()],
                        span: m.content[0].span.or(m.span),
                        message_id: m.message_id.clone(),
                        part_id: m.content[0].part_id.clone(),
                    });
                }
                // Content after a tool_use in the same assistant message. Thinking between
                // calls is how a response with interleaved thinking (Claude Code asks for it)
                // comes, and it is sent back so.
                let after = m.content[first_call..]
                    .iter()
                    .enumerate()
                    .find(|(_, b)| {
                        !matches!(b.kind, BlockKind::ToolCall { .. } | BlockKind::Reasoning)
                    })
                    .map(|(k, _)| k + first_call);
                let next = msgs.get(i + 1);
                let answered: FastSet<&str> = next
                    .filter(|n| is_results_message(n))
                    .map(|n| n.content.iter().map_while(|b| b.tool_result_id()).collect())
                    .unwrap_or_default();
                let (bad_ids, explanation, at) = match after {
                    Some(k) => {
                        let ids: Vec<String> = calls
                            .iter()
                            .filter(|(c, _)| *c < k)
                            .map(|(_, id)| (*id).to_owned())
                            .collect();
                        let what = match m.content[k].kind {
                            BlockKind::Reasoning => "reasoning",
                            BlockKind::Text => "text",
                            _ => "another block",
                        };
                        (
                            ids,
                            format!(
                                "assistant message {i} has {what} after `tool_use` {}: the tool result cannot come immediately after the call",
                                calls[0].1
                            ),
                            Some(k),
                        )
                    }
                    None => {
                        let missing: Vec<String> = calls
                            .iter()
                            .filter(|(_, id)| !answered.contains(id))
                            .map(|(_, id)| (*id).to_owned())
                            .collect();
                        let why = match next {
                            None => "it is the last message".to_owned(),
                            Some(n) if !is_results_message(n) => {
                                format!("message {} is another assistant message", i + 1)
                            }
                            Some(_) => format!(
                                "message {} does not start with their `tool_result` blocks",
                                i + 1
                            ),
                        };
                        (
                            missing,
                            format!(
                                "assistant message {i} calls tools that are never answered: {why}"
                            ),
                            None,
                        )
                    }
                };
                if bad_ids.is_empty() {
                    continue;
                }
                let block = at.map_or(first_call, |k| k);
                let bad: FastSet<&str> = bad_ids.iter().map(String::as_str).collect();
                let first_missing = calls
                    .iter()
                    .find(|(_, id)| bad.contains(id))
                    .map_or(first_call, |(c, _)| *c);
                let pointed = if at.is_some() { block } else { first_missing };
                out.push(Violation {
                    kind: ViolationKind::MissingResult,
                    error: format!(
                        "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        i + 1,
                        bad_ids.join(", ")
                    ),
                    explanation,
                    message_index: i,
                    ids: bad_ids,
                    span: m.content[pointed].span.or(m.span),
                    message_id: m.message_id.clone(),
                    part_id: m.content[pointed].part_id.clone(),
                });
            }
            Role::User | Role::Tool => {
                let prev_calls: FastSet<&str> = i
                    .checked_sub(1)
                    .and_then(|p| msgs.get(p))
                    .filter(|p| p.role == Role::Assistant)
                    .map(|p| p.content.iter().filter_map(|b| b.tool_call_id()).collect())
                    .unwrap_or_default();
                for (k, b) in m.content.iter().enumerate() {
                    let Some(id) = b.tool_result_id() else {
                        continue;
                    };
                    if prev_calls.contains(&id) {
                        continue;
                    }
                    out.push(Violation {
                        kind: ViolationKind::OrphanResult,
                        error: format!(
                            "messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ),
                        explanation: format!(
                            "message {i} answers tool call {id}, which the previous message does not make"
                        ),
                        message_index: i,
                        ids: vec![id.to_owned()],
                        span: b.span.or(m.span),
                        message_id: m.message_id.clone(),
                        part_id: b.part_id.clone(),
                    });
                }
            }
            Role::System => {}
        }
    }
    out
}

/// OpenAI's rules: calls and outputs pair up by id.
pub fn openai(req: &ModelRequest) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut calls: Vec<(usize, usize, &str)> = Vec::new();
    let mut outputs: Vec<(usize, usize, &str)> = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        for (k, b) in m.content.iter().enumerate() {
            if let Some(id) = b.tool_call_id() {
                calls.push((i, k, id));
            }
            if let Some(id) = b.tool_result_id() {
                outputs.push((i, k, id));
            }
        }
    }
    // By id: the last message with an output, the first with a call (a search of the other
    // list per call was quadratic in a long history).
    let mut last_output: crate::FastMap<&str, usize> = crate::FastMap::default();
    for &(i, _, id) in &outputs {
        last_output.insert(id, i);
    }
    let first_call = crate::first_of(calls.iter().map(|&(i, _, id)| (id, i)));
    for &(i, k, id) in &calls {
        if last_output.get(id).is_some_and(|&oi| oi > i) {
            continue;
        }
        let m = &req.messages[i];
        out.push(Violation {
            kind: ViolationKind::MissingResult,
            error: format!("No tool output found for function call {id}"),
            explanation: format!("tool call {id} (message {i}) has no output after it"),
            message_index: i,
            ids: vec![id.to_owned()],
            span: m.content[k].span.or(m.span),
            message_id: m.message_id.clone(),
            part_id: m.content[k].part_id.clone(),
        });
    }
    for &(i, k, id) in &outputs {
        if first_call.get(id).is_some_and(|&ci| ci < i) {
            continue;
        }
        let m = &req.messages[i];
        out.push(Violation {
            kind: ViolationKind::OrphanResult,
            error: format!("No tool call found for function call output with call_id {id}"),
            explanation: format!("output for {id} (message {i}) answers no earlier tool call"),
            message_index: i,
            ids: vec![id.to_owned()],
            span: m.content[k].span.or(m.span),
            message_id: m.message_id.clone(),
            part_id: m.content[k].part_id.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Block;

    fn msg(role: Role, blocks: Vec<BlockKind>) -> ModelMessage {
        ModelMessage {
            role,
            content: blocks.into_iter().map(Block::new).collect(),
            span: None,
            message_id: None,
        }
    }

    fn call(id: &str) -> BlockKind {
        BlockKind::ToolCall {
            id: id.into(),
            name: "get_weather".into(),
        }
    }

    fn result(id: &str) -> BlockKind {
        BlockKind::ToolResult {
            id: id.into(),
            is_error: false,
        }
    }

    fn req(provider: Provider, messages: Vec<ModelMessage>) -> ModelRequest {
        ModelRequest {
            provider,
            messages,
            span: None,
            origin: "test".into(),
            thinking: false,
            response: None,
            session_id: None,
        }
    }

    /// A call id used twice is Anthropic's `tool_use ids must be unique`, at the second call,
    /// even when each call is answered.
    #[test]
    fn a_call_id_used_twice_is_refused_at_the_second_call() {
        let r = req(
            Provider::Anthropic,
            vec![
                msg(Role::Assistant, vec![call("toolu_1")]),
                msg(Role::User, vec![result("toolu_1")]),
                msg(Role::Assistant, vec![BlockKind::Text, call("toolu_1")]),
                msg(Role::User, vec![result("toolu_1")]),
            ],
        );
        let v = check(&r);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::DuplicateCallId);
        assert_eq!(
            v[0].error,
            "messages.2.content.1: `tool_use` ids must be unique"
        );
        assert_eq!(v[0].message_index, 2);
        // Distinct ids: no violation.
        let ok = req(
            Provider::Anthropic,
            vec![
                msg(Role::Assistant, vec![call("toolu_1")]),
                msg(Role::User, vec![result("toolu_1")]),
                msg(Role::Assistant, vec![call("toolu_2")]),
                msg(Role::User, vec![result("toolu_2")]),
            ],
        );
        assert!(check(&ok).is_empty());
    }

    #[test]
    fn text_after_tool_use_is_the_recorded_400() {
        // OpenCode's rejects-malformed-assistant-tool-order-without-patch recording.
        let r = req(
            Provider::Anthropic,
            vec![
                msg(Role::Assistant, vec![call("call_1"), BlockKind::Text]),
                msg(Role::User, vec![result("call_1")]),
                msg(Role::User, vec![BlockKind::Text]),
            ],
        );
        let v = check(&r);
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].error,
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: call_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        );
    }

    #[test]
    fn split_order_is_accepted() {
        // …and the accepted one: text and tool_use in separate assistant messages.
        let r = req(
            Provider::Anthropic,
            vec![
                msg(Role::Assistant, vec![BlockKind::Text]),
                msg(Role::Assistant, vec![call("call_1")]),
                msg(Role::User, vec![result("call_1")]),
                msg(Role::User, vec![BlockKind::Text]),
            ],
        );
        assert_eq!(check(&r), []);
    }

    #[test]
    fn missing_and_orphan_results() {
        let r = req(
            Provider::Anthropic,
            vec![
                msg(Role::User, vec![BlockKind::Text]),
                msg(Role::Assistant, vec![call("a"), call("b")]),
                msg(Role::User, vec![result("a"), result("z")]),
            ],
        );
        let errors: Vec<String> = check(&r).into_iter().map(|v| v.error).collect();
        assert!(errors[0].starts_with("messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: b."));
        assert!(errors[1].starts_with(
            "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: z."
        ));
    }

    #[test]
    fn thinking_first() {
        let mut r = req(
            Provider::Anthropic,
            vec![
                msg(Role::Assistant, vec![call("a"), BlockKind::Reasoning]),
                msg(Role::User, vec![result("a")]),
            ],
        );
        r.thinking = true;
        let errors: Vec<String> = check(&r).into_iter().map(|v| v.error).collect();
        assert_eq!(
            errors[0],
            "messages.0.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`"
        );
    }

    #[test]
    fn interleaved_thinking_between_calls_is_accepted() {
        // One response of a session with interleaved thinking, answered in one user message.
        let r = req(
            Provider::Anthropic,
            vec![
                msg(Role::User, vec![BlockKind::Text]),
                msg(
                    Role::Assistant,
                    vec![
                        BlockKind::Reasoning,
                        call("a"),
                        BlockKind::Reasoning,
                        call("b"),
                    ],
                ),
                msg(Role::User, vec![result("a"), result("b")]),
            ],
        );
        assert_eq!(check(&r), []);
    }

    #[test]
    fn openai_pairs_calls_and_outputs() {
        let r = req(
            Provider::OpenAi,
            vec![
                msg(Role::Assistant, vec![call("call_a"), call("call_b")]),
                msg(Role::Tool, vec![result("call_a"), result("call_x")]),
            ],
        );
        let errors: Vec<String> = check(&r).into_iter().map(|v| v.error).collect();
        assert_eq!(
            errors,
            [
                "No tool output found for function call call_b",
                "No tool call found for function call output with call_id call_x"
            ]
        );
    }

    #[test]
    fn google_wants_each_call_answered_by_the_next_turn() {
        let req = |messages| ModelRequest {
            provider: Provider::Google,
            messages,
            span: None,
            origin: String::new(),
            thinking: false,
            response: None,
            session_id: None,
        };
        let ok = req(vec![
            msg(Role::User, vec![BlockKind::Text]),
            msg(Role::Assistant, vec![BlockKind::Text, call("c1")]),
            msg(Role::User, vec![result("c1")]),
            msg(Role::Assistant, vec![BlockKind::Text]),
        ]);
        assert!(check(&ok).is_empty());
        let unanswered = req(vec![
            msg(Role::User, vec![BlockKind::Text]),
            msg(Role::Assistant, vec![call("c1")]),
            msg(Role::User, vec![BlockKind::Text]),
        ]);
        let v = check(&unanswered);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].kind, ViolationKind::MissingResult);
        assert_eq!(v[0].ids, vec!["c1".to_owned()]);
        let orphan = req(vec![
            msg(Role::User, vec![BlockKind::Text]),
            msg(Role::Assistant, vec![BlockKind::Text]),
            msg(Role::User, vec![result("c9")]),
        ]);
        assert_eq!(check(&orphan)[0].kind, ViolationKind::OrphanResult);
    }
}
