use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::model::PartBody;
use crate::session::{Analysis, Message, PartRecord};

declare_check! {
    /// ## What it does
    /// Reports a step that finished as if nothing were wrong although its reply was cut off: a
    /// `step-finish` whose reason is `unknown` (or empty), with no token counted at all, closing
    /// a step that wrote text and called no tool, whose last text stops mid-sentence (it does not
    /// end with closing punctuation, a bracket, a quote or a code fence). The label points at the
    /// end of that text.
    ///
    /// ## Why it matters
    /// The AI SDK's finish reason starts as `unknown` and its usage as empty: only the stream's
    /// last chunk (`finish_reason` and `usage` in Chat Completions, `message_delta` in Anthropic
    /// Messages) sets them. When the connection drops after some text, the SDK still ends the
    /// stream normally, so OpenCode writes a `step-finish` with reason `unknown` and zero tokens:
    /// no error is recorded, the half reply stays in the history as the assistant's turn (the
    /// model is sent it on every later request), and OpenCode 1.18 asks the model again, which
    /// loops as long as the connection keeps dropping. A provider that sent its last chunk gives
    /// a known reason and counts the output tokens, so a complete reply never looks like this.
    ///
    /// ## Example
    /// ```text
    /// step-start · text "Half a sen" · step-finish { "reason": "unknown",
    ///                                                "tokens": { "input": 0, "output": 0, … } }
    /// ```
    ///
    /// ## How to fix
    /// Ask again (the model never finished its answer). The cause is the connection: a proxy or
    /// gateway that closes long streams, or an idle timeout; the stream's capture shows where it
    /// stopped (`stream-truncated`). Clients can treat a stream that ends without a finish reason
    /// as an error and retry it.
    pub struct ReplyTruncated {
        name: "reply-truncated",
        severity: Warning,
        summary: "A step finished with reason unknown and no tokens: its text was cut off",
    }
}

impl Check for ReplyTruncated {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for session in &analysis.sessions {
            for message in &session.messages {
                for step in steps(message) {
                    let Some(text) = truncated(&step) else {
                        continue;
                    };
                    let (Some(finish), Some(at)) = (step.finish.last(), text.last()) else {
                        continue;
                    };
                    let PartBody::Text(t) = &text.part.body else {
                        continue;
                    };
                    let tail: String = {
                        let trimmed = t.text.trim_end();
                        let start = trimmed
                            .char_indices()
                            .rev()
                            .nth(39)
                            .map_or(0, |(i, _)| i);
                        trimmed[start..].to_owned()
                    };
                    out.push(
                        Self::META
                            .finding(format!(
                                "the reply of message {} was cut off: its step finished with reason `{}` and zero tokens, and its text stops at {tail:?}",
                                message.id,
                                reason_of(step.finish).unwrap_or("")
                            ))
                            .at(at.span.head(), "the text stops mid-sentence")
                            .also(
                                Some(finish.span.head()),
                                "finished with no finish reason and no usage: the stream's last chunk never came",
                            )
                            .help("the stream ended early (a dropped connection) and the half reply was kept in the history with no error; check the connection to the provider")
                            .ids(
                                Ids::default()
                                    .session(session.id.clone())
                                    .message(message.id.clone())
                                    .part(text.part.id.clone()),
                            ),
                    );
                }
            }
        }
    }
}

/// Whether the rule reports a step of `message`: it depends on the message alone.
pub(super) fn cut_off(message: &Message) -> bool {
    steps(message).any(|s| truncated(&s).is_some())
}

/// A closed step: its parts (after the `step-start`) and its `step-finish`.
struct Step<'a> {
    parts: &'a [PartRecord],
    finish: &'a PartRecord,
}

/// The closed steps of a message. A step's parts are those since the last `step-start` or
/// `step-finish` before its `step-finish`: a run of the message's parts, borrowed, not gathered
/// (`cut_off` asks this of every message a diagnosis forgets).
fn steps(message: &Message) -> impl Iterator<Item = Step<'_>> {
    let parts = &message.parts;
    // Where the parts of the step being read start.
    let mut from = 0;
    parts.iter().enumerate().filter_map(move |(i, p)| match p.part.body {
        PartBody::StepStart(_) => {
            from = i + 1;
            None
        }
        PartBody::StepFinish(_) => {
            let step = Step {
                parts: parts.get(from..i).unwrap_or_default(),
                finish: p,
            };
            from = i + 1;
            Some(step)
        }
        _ => None,
    })
}

fn reason_of(p: &PartRecord) -> Option<&str> {
    match &p.part.body {
        PartBody::StepFinish(f) => Some(f.reason.as_str()),
        _ => None,
    }
}

/// The step's last text part, when the step looks cut off.
fn truncated<'a>(step: &Step<'a>) -> Option<&'a PartRecord> {
    let PartBody::StepFinish(f) = &step.finish.part.body else {
        return None;
    };
    let unknown = f.reason.is_empty() || f.reason == "unknown";
    let t = &f.tokens;
    let counted = t.input + t.output + t.reasoning + t.cache.read + t.cache.write;
    if !unknown || counted > 0.0 {
        return None;
    }
    if step
        .parts
        .iter()
        .any(|p| matches!(p.part.body, PartBody::Tool(_)))
    {
        // A step that called tools and stopped is `loop-exited-early`'s.
        return None;
    }
    let last = step
        .parts
        .iter()
        .rev()
        .find(|p| matches!(&p.part.body, PartBody::Text(t) if !t.text.trim().is_empty()))?;
    let PartBody::Text(t) = &last.part.body else {
        return None;
    };
    (!ends_a_sentence(&t.text)).then_some(last)
}

/// Whether text ends where a reply may end: on anything but a letter, a digit, a comma or a
/// hyphen (closing punctuation, a bracket, a quote, a code fence, an emphasis mark, an emoji).
fn ends_a_sentence(text: &str) -> bool {
    text.trim_end()
        .chars()
        .next_back()
        .is_some_and(|c| !(c.is_alphanumeric() || c == ',' || c == '-'))
}

#[cfg(test)]
mod tests {
    use super::ends_a_sentence;

    #[test]
    fn sentence_ends() {
        assert!(ends_a_sentence("Done."));
        assert!(ends_a_sentence("```\n"));
        assert!(ends_a_sentence("see (a)"));
        assert!(ends_a_sentence("完成。"));
        assert!(!ends_a_sentence("Half a sen"));
        assert!(!ends_a_sentence("one, two,"));
        assert!(!ends_a_sentence("the 3"));
    }
}
