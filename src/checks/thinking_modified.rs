use std::collections::{HashMap, HashSet};

use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::protocols::provider::{Violation, ViolationKind};
use crate::request::{BlockKind, ModelRequest, Provider, Role};
use crate::session::{Analysis, ThinkingResponse, TranscriptFacts};

/// Anthropic's answer, verbatim after `messages.N.content.M: `.
const REFUSAL: &str = "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.";

declare_check! {
    /// ## What it does
    /// Compares the latest assistant message of the request a client rebuilds from its
    /// transcript (Claude Code) with the response it was stored from, when that response has
    /// signed `thinking` or `redacted_thinking` blocks: every block the file stores for the
    /// response must be sent, in the stored order, a thinking block's text must be there, and
    /// the message must not join the thinking of two responses. It reports the block left out
    /// (and why: the client drops a call that has no result, or the block is on another branch),
    /// the blanked thinking, or the second response.
    ///
    /// ## Why it matters
    /// With extended thinking on (Claude Code asks for it on every request to models that
    /// support it), Anthropic checks the signed thinking of the latest assistant message against
    /// the response it came from, and any change to that message — a tool call removed, a thinking
    /// text emptied, thinking of two responses merged — answers 400 "`thinking` or
    /// `redacted_thinking` blocks in the latest assistant message cannot be modified" on every
    /// later turn (anthropics/claude-code#19539, #63269; griffinmartin/opencode-claude-auth#261:
    /// dropping an orphan `tool_use` but keeping the thinking). Claude Code 2.1.197 itself leaves
    /// out a `tool_use` with no result when it resumes a session killed while the tool ran, so a
    /// killed thinking session is refused on resume; that version then sends the request again
    /// without any thinking block (a warning), earlier ones are not known to (an error).
    /// Anthropic-compatible endpoints that send no signature are not checked: their blocks are
    /// unsigned. A thinking block stored with an empty text is a change only when the file holds
    /// signed thinking with text: with the display `omitted` (newer models' default since 2026,
    /// anthropics/claude-code#31326) every block comes with an empty text and is sent back as
    /// received; a client that empties some texts of a session whose thinking it stored
    /// (anthropics/claude-code#63277, interleaved thinking with several tool calls) is refused.
    ///
    /// ## Example
    /// ```text
    /// {"type":"assistant","message":{"id":"msg_01","content":[{"type":"thinking","signature":"Eq…",…}]},…}
    /// {"type":"assistant","message":{"id":"msg_01","content":[{"type":"tool_use","id":"toolu_01",…}]},…}
    /// (killed: no tool_result; resumed with "Continue")
    /// → 400 messages.2.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified.
    /// ```
    ///
    /// ## How to fix
    /// `rewind repair`. For a call left without a result at the end of the transcript, it answers
    /// the call with the client's own interruption result, so the message is sent whole.
    /// Otherwise it removes the response's signed thinking from the active history: a record
    /// holding only thinking is dropped (its children re-linked to its parent), other records
    /// lose their thinking blocks. A latest assistant message without thinking is accepted (it is
    /// what Claude Code 2.1.197 sends when it retries); the thinking text stays in the backup.
    pub struct ThinkingModified {
        name: "thinking-modified",
        severity: Error,
        summary: "The latest assistant message changes a signed thinking response (quotes the provider's 400)",
    }
}

impl Check for ThinkingModified {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(facts) = analysis.transcript.as_deref() else {
            return;
        };
        if facts.thinking.is_empty() {
            return;
        }
        let retries = analysis
            .sessions
            .first()
            .and_then(|s| s.version.as_deref())
            .is_some_and(retries_without_thinking);
        for req in &analysis.requests {
            if req.provider == Provider::Anthropic {
                let from = out.len();
                check(req, facts, out);
                if retries {
                    for f in &mut out[from..] {
                        *f = f.clone().severity(Severity::Warning).note(RETRY);
                    }
                }
            }
        }
    }
}

/// What a client that retries does.
const RETRY: &str = "Claude Code 2.1.197 answers this 400 by sending the request again without the thinking blocks (observed): the session goes on, without the model's reasoning of that turn and after one refused request; a client without that retry (Claude Code 2.1.150 in anthropics/claude-code#63269) is refused on every turn";

/// Whether the Claude Code version that wrote the transcript retries a request refused for
/// modified thinking without its thinking blocks: 2.1.197 was observed to; earlier versions are
/// not known to.
fn retries_without_thinking(version: &str) -> bool {
    let mut parts = version
        .trim()
        .split(['.', '-', '+'])
        .map(|p| p.parse::<u64>().ok());
    let triple = (
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    );
    match triple {
        (Some(a), Some(b), Some(c)) => (a, b, c) >= (2, 1, 197),
        _ => false,
    }
}

/// Where each record's blocks belong: record → index of its response in `facts.thinking`.
fn responses_by_record(facts: &TranscriptFacts) -> HashMap<&str, usize> {
    let mut at = HashMap::new();
    for (r, response) in facts.thinking.iter().enumerate() {
        for b in &response.blocks {
            at.insert(b.record.as_str(), r);
            for c in &b.copies {
                at.insert(c.as_str(), r);
            }
        }
    }
    at
}

/// Whether a stored block and a sent one are the same block: same record (or a copy), same kind.
fn same(stored: &crate::session::StoredBlock, record: &str, kind: &BlockKind) -> bool {
    (stored.record == record || stored.copies.iter().any(|c| c == record))
        && match (&stored.kind, kind) {
            (BlockKind::ToolCall { id: a, .. }, BlockKind::ToolCall { id: b, .. }) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
}

fn describe(kind: &BlockKind) -> String {
    match kind {
        BlockKind::ToolCall { id, name } => format!("its `tool_use` {id} ({name})"),
        BlockKind::Text => "its text block".to_owned(),
        BlockKind::Reasoning => "a thinking block".to_owned(),
        _ => "a block".to_owned(),
    }
}

/// How the latest assistant message changes a signed response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Stored blocks of the response are not sent: the first one (index in the response's
    /// stored blocks), how many, and whether the first is on the history the client rebuilds
    /// from (it leaves it out itself) or not (a dead-end branch).
    LeftOut {
        first: usize,
        count: usize,
        on_history: bool,
    },
    /// A signed thinking block whose text is empty is sent (at this index of the message).
    Blank { at: usize },
    /// The response's blocks are sent in another order than stored.
    Reordered,
    /// The message also holds the signed thinking of an earlier response (index in
    /// `facts.thinking`).
    Joined { earlier: usize },
}

/// One signed response the latest assistant message changes.
#[derive(Clone, Debug)]
pub struct Modified {
    /// Index of the latest assistant message in the request.
    pub message: usize,
    /// Index of the response in `TranscriptFacts::thinking`.
    pub response: usize,
    /// Index of its first signed thinking block in the message.
    pub thinking_at: usize,
    pub change: Change,
}

impl Modified {
    /// The call id of the first left-out block, when it is a call.
    pub fn left_out_call<'a>(&self, facts: &'a TranscriptFacts) -> Option<&'a str> {
        match self.change {
            Change::LeftOut { first, .. } => match &facts.thinking[self.response].blocks[first].kind
            {
                BlockKind::ToolCall { id, .. } => Some(id),
                _ => None,
            },
            _ => None,
        }
    }

    /// What the message does to the response, in words.
    pub fn what(&self, facts: &TranscriptFacts) -> String {
        let response = &facts.thinking[self.response];
        match &self.change {
            Change::LeftOut {
                first,
                count,
                on_history,
            } => {
                let stored = &response.blocks[*first];
                let why = match (&stored.kind, on_history) {
                    (BlockKind::ToolCall { .. }, true) => format!(
                        "{} leaves it out because no result follows it",
                        facts.client
                    ),
                    (_, true) => format!("{} leaves it out", facts.client),
                    (_, false) => {
                        "it is not on the history the client resumes from (a dead-end branch)"
                            .to_owned()
                    }
                };
                let more = match count {
                    1 => String::new(),
                    n => format!(" and {} other block(s)", n - 1),
                };
                format!(
                    "sends response {}'s signed thinking without {}{more}: {why}",
                    response.message_id,
                    describe(&stored.kind)
                )
            }
            Change::Blank { .. } => format!(
                "sends a thinking block of response {} whose text is empty but whose signature is kept: the signature was made over the text it had",
                response.message_id
            ),
            Change::Reordered => format!(
                "sends the blocks of response {} in another order than it was stored",
                response.message_id
            ),
            Change::Joined { earlier } => format!(
                "joins the signed thinking of responses {} and {} in one assistant message",
                facts.thinking[*earlier].message_id, response.message_id
            ),
        }
    }

    /// Whether the response has a signed thinking block with its text emptied.
    pub fn has_blank(&self, facts: &TranscriptFacts) -> bool {
        facts.thinking[self.response]
            .blocks
            .iter()
            .any(|s| s.thinking.as_ref().is_some_and(|t| t.blank))
    }
}

/// The signed responses the latest assistant message of `req` changes: per response its first
/// change (left out, blanked, reordered), then the second response joined to a first.
pub fn modified(req: &ModelRequest, facts: &TranscriptFacts) -> Vec<Modified> {
    let mut out = Vec::new();
    let Some((i, latest)) = req
        .messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)
    else {
        return out;
    };
    let by_record = responses_by_record(facts);
    // A blank signed block is a change only where the file shows the client stored thinking
    // text: with the thinking display `omitted` (newer models' default, and what `-p`/SDK runs
    // get), the provider itself answers every thinking block with an empty text and a signature
    // over it, and the block sent back as stored is the original.
    let texts_stored = facts
        .thinking
        .iter()
        .flat_map(|r| &r.blocks)
        .filter_map(|b| b.thinking.as_ref())
        .any(|t| t.signed && !t.redacted && !t.blank);
    // The responses the latest message sends blocks of, in order, with those blocks' positions.
    let mut sent: Vec<(usize, Vec<usize>)> = Vec::new();
    for (k, b) in latest.content.iter().enumerate() {
        let Some(&r) = b.part_id.as_deref().and_then(|p| by_record.get(p)) else {
            continue;
        };
        match sent.iter_mut().find(|(x, _)| *x == r) {
            Some((_, ks)) => ks.push(k),
            None => sent.push((r, vec![k])),
        }
    }
    // The stored block a sent one is, if any.
    let stored_of = |response: &ThinkingResponse, k: usize| {
        let b = &latest.content[k];
        let record = b.part_id.as_deref().unwrap_or_default();
        response
            .blocks
            .iter()
            .position(|s| same(s, record, &b.kind))
    };
    let history_records: HashSet<&str> = facts
        .history
        .iter()
        .flat_map(|m| m.content.iter().filter_map(|b| b.part_id.as_deref()))
        .collect();
    let mut signed_responses: Vec<(usize, usize)> = Vec::new();
    for (r, ks) in &sent {
        let response = &facts.thinking[*r];
        // Only signed thinking is checked by the provider.
        let Some(first) = ks.iter().copied().find(|&k| {
            stored_of(response, k).is_some_and(|s| {
                response.blocks[s]
                    .thinking
                    .as_ref()
                    .is_some_and(|t| t.signed)
            })
        }) else {
            continue;
        };
        signed_responses.push((*r, first));
        // Each stored block of the response, with where the latest message sends it.
        let placed: Vec<Option<usize>> = (0..response.blocks.len())
            .map(|s| ks.iter().copied().find(|&k| stored_of(response, k) == Some(s)))
            .collect();
        let missing: Vec<usize> = (0..placed.len()).filter(|&s| placed[s].is_none()).collect();
        let change = if let Some(&s) = missing.first() {
            Change::LeftOut {
                first: s,
                count: missing.len(),
                on_history: history_records.contains(response.blocks[s].record.as_str()),
            }
        } else if let Some(k) = ks.iter().copied().filter(|_| texts_stored).find(|&k| {
            stored_of(response, k).is_some_and(|s| {
                response.blocks[s]
                    .thinking
                    .as_ref()
                    .is_some_and(|t| t.blank)
            })
        }) {
            Change::Blank { at: k }
        } else if placed.windows(2).any(|w| w[0] > w[1]) {
            Change::Reordered
        } else {
            continue;
        };
        out.push(Modified {
            message: i,
            response: *r,
            thinking_at: first,
            change,
        });
    }
    if let [(a, _), (b, k), ..] = signed_responses[..] {
        out.push(Modified {
            message: i,
            response: b,
            thinking_at: k,
            change: Change::Joined { earlier: a },
        });
    }
    out
}

/// The changes as broken provider rules, for the request view.
pub fn violations(req: &ModelRequest, facts: &TranscriptFacts) -> Vec<Violation> {
    modified(req, facts)
        .into_iter()
        .map(|m| {
            let block = req.messages.get(m.message).and_then(|msg| msg.content.get(m.thinking_at));
            Violation {
                kind: ViolationKind::ThinkingModified,
                error: format!("messages.{}.content.{}: {REFUSAL}", m.message, m.thinking_at),
                explanation: format!("the latest assistant message {}", m.what(facts)),
                message_index: m.message,
                ids: m.left_out_call(facts).map(str::to_owned).into_iter().collect(),
                span: block.and_then(|b| b.span),
                message_id: Some(facts.thinking[m.response].message_id.clone()),
                part_id: block.and_then(|b| b.part_id.clone()),
            }
        })
        .collect()
}

fn check(req: &ModelRequest, facts: &TranscriptFacts, out: &mut Vec<Finding>) {
    let Some(latest) = req.messages.iter().rev().find(|m| m.role == Role::Assistant) else {
        return;
    };
    for m in modified(req, facts) {
        let response = &facts.thinking[m.response];
        let (i, k) = (m.message, m.thinking_at);
        let error = format!("messages.{i}.content.{k}: {REFUSAL}");
        let mut ids = Ids::default();
        ids.session_id.clone_from(&req.session_id);
        ids.message_id = Some(response.message_id.clone());
        ids.part_id.clone_from(&latest.content[k].part_id);
        let what = m.what(facts);
        let label = if matches!(m.change, Change::Joined { .. }) {
            "thinking of a second response in the latest assistant message"
        } else {
            "signed thinking of the latest assistant message"
        };
        let mut left_out = None;
        match &m.change {
            Change::LeftOut { first, .. } => {
                ids.call_id = m.left_out_call(facts).map(str::to_owned);
                left_out = response.blocks[*first].span;
            }
            Change::Blank { at } => ids.part_id.clone_from(&latest.content[*at].part_id),
            Change::Reordered | Change::Joined { .. } => {}
        }
        let Some(span) = latest.content[k]
            .span
            .or(latest.span)
            .or(response.blocks[0].span)
        else {
            continue;
        };
        let mut f = ThinkingModified::META
            .finding(format!(
                "{} {what}; Anthropic answers 400: \"{error}\"",
                req.origin
            ))
            .at(span, label);
        if left_out.is_some() {
            f = f.also(left_out, "stored in the response, left out of the request");
        }
        f = f.note(if matches!(m.change, Change::Joined { .. }) {
            "the provider accepts one response's signed thinking per assistant message; two assistant responses with nothing between them are merged into one message"
        } else {
            "with extended thinking on, Anthropic checks the signed thinking of the latest assistant message against the response it came from: the message must be sent as it was received"
        });
        let answered_by_repair = matches!(m.change, Change::LeftOut { on_history: true, .. })
            && m.left_out_call(facts).is_some()
            && !m.has_blank(facts);
        f = f.help(if answered_by_repair {
            "run `rewind repair`: it answers the call with the client's interruption result, so the message is sent whole"
        } else {
            "run `rewind repair`: it removes this response's signed thinking from the active history (a latest assistant message without thinking is accepted); `rewind explain thinking-modified` says more"
        });
        out.push(f.ids(ids));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::source::FileId;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/transcripts");

    fn transcript(rel: &str) -> String {
        let dir = std::path::Path::new(FIXTURES).join(rel);
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.extension().is_some_and(|e| e == "jsonl")
                    && p.file_name().is_some_and(|n| n != "requests.jsonl")
            })
            .unwrap();
        std::fs::read_to_string(file).unwrap()
    }

    fn findings(text: &str) -> Vec<Finding> {
        let mut analysis =
            crate::formats::claude_code::replay::replay(text.as_bytes(), FileId(0)).unwrap();
        let next = crate::formats::claude_code::request::next_request(&analysis);
        analysis.requests.extend(next);
        let mut out = Vec::new();
        ThinkingModified.run(&analysis, &mut out);
        out
    }

    /// Each record of the text, as JSON, edited by `f` (which may drop it by returning None).
    fn edit(text: &str, f: impl Fn(serde_json::Value) -> Option<serde_json::Value>) -> String {
        text.lines()
            .filter_map(|l| f(serde_json::from_str(l).unwrap()))
            .map(|v| v.to_string() + "\n")
            .collect()
    }

    #[test]
    fn versions_that_retry() {
        assert!(retries_without_thinking("2.1.197"));
        assert!(retries_without_thinking("2.2.0"));
        assert!(retries_without_thinking("3.0.0-beta.1"));
        assert!(!retries_without_thinking("2.1.150"));
        assert!(!retries_without_thinking("2.0.76"));
        assert!(!retries_without_thinking("garbage"));
    }

    #[test]
    fn a_killed_thinking_session_is_refused_on_resume() {
        let f = findings(&transcript("claude-thinking/kill_tool"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.unescaped().contains("without its `tool_use`"), "{:?}", f[0].message);
        assert!(f[0].message.unescaped().contains("messages.1.content.0: `thinking`"), "{:?}", f[0].message);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].ids.call_id.as_deref().is_some_and(|c| c.starts_with("toolu_")));
    }

    #[test]
    fn an_older_client_is_refused_on_every_turn() {
        let text = transcript("claude-thinking/kill_tool").replace("\"2.1.197\"", "\"2.1.150\"");
        let f = findings(&text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn healthy_thinking_sessions_are_clean() {
        for case in ["claude-thinking/tool", "claude-thinking/resume_after_kill_tool"] {
            assert!(findings(&transcript(case)).is_empty(), "{case}");
        }
    }

    #[test]
    fn an_emptied_thinking_text_is_a_change() {
        // The last response of the healthy session, its thinking text blanked.
        let text = transcript("claude-thinking/tool");
        let lines: Vec<&str> = text.lines().collect();
        let last_thinking = lines
            .iter()
            .rposition(|l| l.contains("\"type\":\"thinking\""))
            .unwrap();
        let uuid = serde_json::from_str::<serde_json::Value>(lines[last_thinking]).unwrap()["uuid"]
            .clone();
        let blanked = edit(&text, |mut v| {
            if v["uuid"] == uuid {
                v["message"]["content"][0]["thinking"] = "".into();
            }
            Some(v)
        });
        let f = findings(&blanked);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.unescaped().contains("text is empty"), "{:?}", f[0].message);
    }

    /// With the thinking display `omitted`, the provider answers every thinking block with an
    /// empty text and a signature: stored so, sent back so, accepted. Nothing in the file shows
    /// a text that was there, so no blank block is a change.
    #[test]
    fn a_session_whose_every_thinking_text_is_empty_is_not_blanked() {
        let text = edit(&transcript("claude-thinking/tool"), |mut v| {
            if let Some(blocks) = v
                .pointer_mut("/message/content")
                .and_then(|c| c.as_array_mut())
            {
                for b in blocks.iter_mut().filter(|b| b["type"] == "thinking") {
                    b["thinking"] = "".into();
                }
            }
            Some(v)
        });
        assert!(text.contains("\"thinking\":\"\""));
        assert!(findings(&text).is_empty(), "{:?}", findings(&text));
    }

    #[test]
    fn unsigned_thinking_is_not_checked() {
        // An Anthropic-compatible endpoint that sends no signature: nothing to check.
        let text = edit(&transcript("claude-thinking/kill_tool"), |mut v| {
            if let Some(b) = v.pointer_mut("/message/content/0")
                && b["type"] == "thinking"
            {
                b["signature"] = "".into();
            }
            Some(v)
        });
        assert!(findings(&text).is_empty());
    }

    #[test]
    fn two_responses_joined_in_one_message() {
        // The healthy session without its tool call and result: two thinking responses in a row.
        let text = edit(&transcript("claude-thinking/tool"), |v| {
            let content = v.pointer("/message/content/0/type").and_then(|t| t.as_str());
            match content {
                Some("tool_use" | "tool_result") => None,
                _ => Some(v),
            }
        });
        // Re-link the chain over the two dropped records.
        let ids: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut prev: Option<serde_json::Value> = None;
        let relinked: String = ids
            .into_iter()
            .map(|mut v| {
                if v.get("uuid").is_some() {
                    if let Some(p) = &prev {
                        v["parentUuid"] = p.clone();
                    }
                    prev = v.get("uuid").cloned();
                }
                v.to_string() + "\n"
            })
            .collect();
        let f = findings(&relinked);
        assert!(
            f.iter().any(|f| f.message.unescaped().contains("joins the signed thinking of responses")),
            "{f:?}"
        );
    }
}
