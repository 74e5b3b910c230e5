use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::{Analysis, EventKind};

/// Longer than anyone waits for an interactive or CI agent run.
pub(super) const EXCESSIVE_MS: u64 = 10 * 60 * 1000;

declare_check! {
    /// ## What it does
    /// Reports a retry sleep the agent announced that is far longer than anyone would wait: over
    /// ten minutes, typically hours taken from a provider's `retry-after` header after a rate
    /// limit. It shows the delay and the `retry-after` it came from.
    ///
    /// A sleep that the log shows was not waited out (the agent kept working after it, and the log
    /// ends before the sleep could have) is reported at information level: it held nothing up.
    ///
    /// ## Why it matters
    /// A free-tier rate limit can answer with a `retry-after` of half a day. An agent that obeys
    /// it blindly hangs: the run looks alive, holds its resources, and ends much later with a
    /// timeout that names neither the rate limit nor the wait.
    ///
    /// ## Example
    /// ```text
    /// "service": "retry-fetch", "headerValue": 44548, "message": "parsed retry-after header (seconds)"
    /// "service": "retry-fetch", "delay": 46327183, "delayMinutes": "772.12", "message": "rate limited, will retry"
    /// ```
    ///
    /// ## How to fix
    /// Cap the retry sleep (a few minutes), and past the cap fail with the rate limit's own error
    /// or switch to another provider or model instead of waiting.
    pub struct RetryWaitExcessive {
        name: "retry-wait-excessive",
        severity: Warning,
        summary: "A retry sleep far longer than anyone would wait (a rate limit's retry-after of hours)",
    }
}

impl Check for RetryWaitExcessive {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for e in &analysis.events {
            let EventKind::RetryWait(wait) = &e.kind else {
                continue;
            };
            let crate::session::RetryWait {
                delay_ms,
                delay_span,
                retry_after,
                after: waited,
            } = &**wait;
            if *delay_ms <= EXCESSIVE_MS {
                continue;
            }
            let after = retry_after
                .map(|(ms, _)| {
                    format!(
                        ", after the provider's retry-after of {} s",
                        super::usage_mismatch::thousands(ms / 1000)
                    )
                })
                .unwrap_or_default();
            let mut f = Self::META
                .finding(format!(
                    "the agent will sleep {} ({} ms) before retrying{after}",
                    duration(*delay_ms),
                    super::usage_mismatch::thousands(*delay_ms)
                ))
                .at(
                    delay_span.unwrap_or(e.span.head()),
                    format!("a retry sleep of {}", duration(*delay_ms)),
                )
                .ids(Ids {
                    session_id: e.session.clone(),
                    ..Ids::default()
                });
            if let Some((_, span)) = retry_after {
                f = f.also(Some(*span), "the provider's retry-after");
            }
            // The agent worked on after the announcement and the log ended before the sleep
            // could have: nothing waited it out (a side request's retry, or a run that moved
            // on). Said, at information level: the sleep did not hold the session up.
            if let (true, Some(went_on)) = (waited.work, waited.log_went_on_ms)
                && went_on < *delay_ms
            {
                f = f
                    .severity(crate::checks::diagnostic::Severity::Info)
                    .note(format!(
                        "nothing waited it out: the agent went on working after it, and the log ends {} later, before the sleep would have",
                        duration(went_on)
                    ));
            }
            out.push(f.help("cap retry sleeps at a few minutes; past the cap, fail with the rate limit's error or switch provider"));
        }
    }
}

/// `46327183` ms → `12.9 h`.
pub(super) fn duration(ms: u64) -> String {
    let s = ms as f64 / 1000.0;
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}
