use super::incidents::{Incident, incidents};
use super::Check;
use crate::diagnostic::{Finding, Ids, Severity};
use crate::model::zod;
use crate::session::{Analysis, ErrorInfo, EventKind};

declare_check! {
    /// ## What it does
    /// Reports each error that struck a session — the session's `error` event, an error the
    /// processor or prompt loop logged, a process crash — with its class (`UnknownError`,
    /// `APIError`, `UnhandledRejection`…), whether it was retryable, what it wrapped, and what
    /// followed (cancel, idle, a crash, the end of the log). Traces of one failure are reported
    /// once. An error the session recovered from is a warning; one it never recovered from is an
    /// error.
    ///
    /// ## Why it matters
    /// The error a user sees last is rarely the root cause: an `UnknownError` wraps the real
    /// exception, a timeout earlier in the log is unrelated, a crash hides behind a rate limit in
    /// title generation. Seeing each error once, classified and in order, tells them apart.
    ///
    /// ## Example
    /// ```text
    /// { "type": "error", "sessionID": "ses_…",
    ///   "error": { "name": "UnknownError", "data": { "message": "AI_JSONParseError: JSON parsing failed: …" } } }
    /// ```
    ///
    /// ## How to fix
    /// Read the wrapped error and the related labels. Retryable errors (rate limits, timeouts,
    /// closed sockets) need backoff or a longer timeout; non-retryable ones point at a bug the
    /// other findings usually name (`validation-crash`, `stream-error-fatal`).
    pub struct SessionError {
        name: "session-error",
        severity: Error,
        summary: "An error struck the session: its class, retryability, what it wrapped and what followed",
    }
}

impl Check for SessionError {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for incident in incidents(analysis) {
            out.push(finding(&incident));
        }
    }
}

/// The class an error wraps, as far as its text says.
fn wrapped(info: &ErrorInfo) -> Option<String> {
    if let Some(w) = &info.wrapped {
        return Some(w.clone());
    }
    if zod::parse_issues(&info.message).is_some() && info.name.as_deref() != Some("ZodError") {
        return Some("ZodError".into());
    }
    let head = info.message.split_once(':')?.0;
    let looks_like_class = head.ends_with("Error")
        && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && info.name.as_deref() != Some(head);
    looks_like_class.then(|| head.to_owned())
}

fn retryable(info: &ErrorInfo) -> Option<bool> {
    info.retryable.or(match info.name.as_deref() {
        Some("UnknownError" | "MessageAbortedError" | "ProviderAuthError" | "ZodError") => {
            Some(false)
        }
        Some("SocketConnectionError" | "TimeoutError") => Some(true),
        _ => None,
    })
}

fn finding(incident: &Incident<'_>) -> Finding {
    let (event, info) = incident.primary();
    let class = info.name.as_deref();
    let what = match (&event.kind, class) {
        (EventKind::ProcessCrash(_), _) => format!(
            "the agent process crashed ({})",
            class.unwrap_or("uncaught error")
        ),
        (EventKind::Log { service, .. }, Some(c)) => format!("{service} failed with {c}"),
        (_, Some(c)) => format!("the session failed with {c}"),
        (_, None) => "a request of the session failed".to_owned(),
    };
    let mut message = what;
    if let Some(w) = wrapped(info) {
        message.push_str(&format!(" wrapping {w}"));
    }
    match retryable(info) {
        Some(true) => message.push_str(" (retryable)"),
        Some(false) => message.push_str(" (not retryable)"),
        None => {}
    }
    let text = zod::parse_issues(&info.message)
        .map(|issues| format!("ZodError: {}", zod::decode(&issues).headline))
        .unwrap_or_else(|| crate::session::first_line(&info.message, 120));
    let text = text.trim_end_matches('.');
    if !text.is_empty() {
        message.push_str(&format!(": {text}"));
    }
    if incident.fatal {
        let after = incident.aftermath_words();
        if after.is_empty() {
            message.push_str("; the session never recovered");
        } else {
            message.push_str(&format!("; the session never recovered, then: {after}"));
        }
    } else {
        message.push_str("; the session continued afterwards");
    }

    let severity = if incident.fatal {
        Severity::Error
    } else {
        Severity::Warning
    };
    let mut f = SessionError::META
        .finding(message)
        .severity(severity)
        .at(info.message_span.unwrap_or(event.span.head()), "the error")
        .ids(Ids {
            session_id: event.session.clone(),
            ..Ids::default()
        });
    for (other, other_info) in incident.errors() {
        if std::ptr::eq(other, event) {
            continue;
        }
        let label = match &other.kind {
            EventKind::ProcessCrash(_) => "the process died of it",
            EventKind::RawError(_) => "printed again, uncaught",
            EventKind::SessionError(_) => "the session's error event",
            _ => "logged here too",
        };
        f = f.also(
            Some(other_info.message_span.unwrap_or(other.span.head())),
            label,
        );
    }
    for (word, span) in &incident.aftermath {
        if !incident.events.iter().any(|e| e.span == *span) {
            f = f.also(Some(span.head()), word.clone());
        }
    }
    if info.message.contains("reading 'input_tokens'") {
        f = f.help("the provider returned no usage and the SDK read `usage.input_tokens` from undefined (a TypeError); default missing usage to zeros");
    } else if info.message.contains("timed out") {
        f = f.help(
            "a request timed out; if it recurs, raise the timeout or check the provider's latency",
        );
    } else if info.message.contains("socket connection was closed") {
        f = f.help("the connection dropped mid-stream; retries with backoff usually recover, check the network or gateway");
    } else if !incident.fatal {
        f = f.help("the session recovered from this error; it matters if it recurs");
    } else {
        f = f.help("other findings at the same place usually name the root cause");
    }
    f
}
