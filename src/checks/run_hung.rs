use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::Analysis;

/// Silence from an agent with work in hand that no one waits out: the retry sleep's bound.
const QUIET_MS: u64 = super::retry_wait_excessive::EXCESSIVE_MS;

declare_check! {
    /// ## What it does
    /// Reports an agent run that hung: the agent had work in hand at its last record (a prompt
    /// received, a step, a tool or a provider's set-up begun, and no loop exit, idle session or
    /// error since), and then the run was stopped from outside (the terminal's `^C`, the
    /// wrapper's `❌ Interrupted (CTRL+C)` or `❌ Terminated`, a CI job cancelled or out of
    /// time), or the log went on for more than ten minutes with nothing more from the agent. It
    /// points at the agent's last record, which says what it was waiting on.
    ///
    /// ## Why it matters
    /// A hang leaves no error behind: no step failed, no tool errored, the session never ended.
    /// Every other rule stays silent, and the run reads as one that simply produced nothing. A
    /// provider package installed at run time (`bun add` that never returns), a request with no
    /// timeout or a tool waiting on input hang this way until someone presses Ctrl+C or the CI
    /// job runs out of time.
    ///
    /// ## Example
    /// ```text
    /// "service": "bun", "cmd": ["…/bun", "add", "--force", "--exact", …, "@openrouter/ai-sdk-provider@latest"], "message": "running"
    /// [2026-02-14T10:51:02.118Z] [ERROR] ❌ Interrupted (CTRL+C)
    /// ```
    ///
    /// ## How to fix
    /// Find what the agent was waiting on at its last record and give it a timeout (or remove
    /// it from the run: bundle the provider package rather than install it at run time). A
    /// wrapper that waits on an agent should stop it after a bound and say why.
    pub struct RunHung {
        name: "run-hung",
        severity: Error,
        summary: "The agent stopped with work in hand: the run was interrupted, timed out, or the log went on without it",
    }
}

impl Check for RunHung {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(tail) = &analysis.tail else {
            return;
        };
        if !tail.busy {
            return;
        }
        let quiet = tail.quiet_ms.filter(|q| *q >= QUIET_MS);
        let message = match (&tail.stop, quiet) {
            (None, None) => return,
            (Some(stop), Some(q)) => format!(
                "the agent wrote nothing for {} with work in hand, then the run was stopped from outside (`{}`): it hung",
                minutes(q),
                stop.words
            ),
            (Some(stop), None) => format!(
                "the run was stopped from outside (`{}`) while the agent had work in hand: its last record was not the end of its work",
                stop.words
            ),
            (None, Some(q)) => format!(
                "the agent wrote nothing for the last {} of the log with work in hand: it hung",
                minutes(q)
            ),
        };
        let last = match quiet {
            Some(q) => format!("the agent's last record: nothing followed it for {}", minutes(q)),
            None => "the agent's last record".to_owned(),
        };
        let mut f = Self::META
            .finding(message)
            .at(tail.last_record.head(), last)
            .ids(Ids::default())
            .note("no loop exit, idle session or error followed the work the agent had begun: what this record started (an install, a request, a tool) never returned");
        if let Some(stop) = &tail.stop {
            let what = if stop.timeout {
                "the run ran out of time here"
            } else {
                "the run was stopped here"
            };
            f = f.also(Some(stop.span), what);
        }
        out.push(f.help("find what the agent was waiting on at its last record and give it a timeout; a hang leaves no error for other rules to report"));
    }
}

/// `2_280_000` → `38 min`; under a minute, in seconds.
fn minutes(ms: u64) -> String {
    match ms / 60_000 {
        0 => format!("{} s", ms / 1000),
        m if m < 120 => format!("{m} min"),
        m => format!("{} h {} min", m / 60, m % 60),
    }
}
