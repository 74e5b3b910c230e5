use super::streams::{alternative_note, event_no, reaction};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::{Analysis, EventKind};

declare_check! {
    /// ## What it does
    /// Reports errors the provider sent inside a stream that started fine (HTTP 200):
    /// Anthropic's `event: error` (`overloaded_error`, `rate_limit_error`…), OpenAI Responses'
    /// `error` and `response.failed`, a Chat Completions `{"error": …}` chunk, an AI SDK UI
    /// `error` chunk, AG-UI `RUN_ERROR`. Traces of one failure (an `error` then
    /// `response.failed`) are reported once, with what the processor did about it.
    ///
    /// ## Why it matters
    /// These errors never show up as a failed HTTP call, so retry logic keyed on status codes
    /// misses them, and a UI may render the half-finished answer as if it were complete. Whether
    /// the error is retryable (overloaded, rate limits) decides whether the agent should retry.
    ///
    /// ## Example
    /// ```text
    /// {"type":"error","sequence_number":2,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota, …"}}
    /// {"type":"response.failed",…}
    /// ```
    ///
    /// ## How to fix
    /// Read the provider's message: quota and authentication errors need action on the account;
    /// overloaded and rate-limit errors need backoff and a retry of the whole request.
    pub struct StreamProviderError {
        name: "stream-provider-error",
        severity: Error,
        summary: "The provider reported an error inside the stream (overloaded_error, response.failed, an in-band error)",
    }
}

impl Check for StreamProviderError {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let session = analysis.sessions.first().map(|s| s.id.clone());
        let errors: Vec<_> = analysis
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::StreamProviderError(i) => Some((e, i)),
                _ => None,
            })
            .collect();
        let mut used = vec![false; errors.len()];
        for i in 0..errors.len() {
            if used[i] {
                continue;
            }
            used[i] = true;
            let (event, info) = errors[i];
            let name = info.name.as_deref().unwrap_or("error");
            let mut f = Self::META
                .finding(format!(
                    "the provider reported an error inside the stream (event {}): {name}: {}",
                    event_no(event.seq),
                    crate::session::first_line(&info.message, 200)
                ))
                .at(
                    info.message_span.unwrap_or(event.span),
                    "the provider's error",
                );
            for (j, (other, other_info)) in errors.iter().enumerate().skip(i + 1) {
                if other_info.message == info.message || other.seq <= event.seq + 2 {
                    used[j] = true;
                    f = f.also(
                        Some(other_info.message_span.unwrap_or(other.span)),
                        format!(
                            "reported again ({})",
                            other_info.name.as_deref().unwrap_or("error")
                        ),
                    );
                }
            }
            let retryable = crate::protocols::stream::openai_chat::is_retryable(name);
            f = f.note(if retryable {
                "the error is retryable: the request should be retried with backoff"
            } else {
                "the error is not retryable: retrying the same request will fail the same way"
            });
            if let Some(r) = reaction(analysis, event.seq) {
                f = f.note(r);
            }
            if let Some(n) = alternative_note(analysis, event.seq) {
                f = f.note(n);
            }
            f = f.help(
                "the HTTP status was 200: retry logic keyed on status codes misses in-band errors",
            );
            out.push(f.ids(Ids {
                session_id: session.clone(),
                ..Ids::default()
            }));
        }
    }
}
