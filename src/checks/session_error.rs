use super::incidents::{Incident, incidents};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::model::zod;
use crate::session::{Analysis, ErrorInfo, Event, EventKind};

declare_check! {
    /// ## What it does
    /// Reports each error that struck a session — the session's `error` event, an error the
    /// processor or prompt loop logged, a process crash — with its class (`UnknownError`,
    /// `APIError`, `UnhandledRejection`…), whether it was retryable, what it wrapped, and what
    /// followed (cancel, idle, a crash, the end of the log). Traces of one failure are reported
    /// once. An error the session recovered from is a warning; one it never recovered from is an
    /// error; an abort (`MessageAbortedError`) in a log is information. A stored session's
    /// messages report their stored `error` the same way, except a reply the user stopped:
    /// that is the user's choice, no finding, and the session summary counts it.
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
        // A stored reply the user stopped is the user's choice, not a failure: the session
        // summary counts it. (In an agent log an abort may be the agent's own timeout, and stays
        // an information.)
        let store = analysis.format.is_opencode_store();
        let incidents = incidents(analysis);
        if incidents.is_empty() {
            return;
        }
        let marks = Marks::new(analysis);
        for incident in incidents {
            if store && incident.errors().all(|(_, info)| aborted(info)) {
                continue;
            }
            out.push(finding(analysis, &marks, &incident));
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

/// The events the notes look for around an error, gathered in one walk of the timeline (a walk
/// per incident was quadratic in a log of many failing sessions).
struct Marks<'a> {
    /// Positions of new runs.
    runs: Vec<crate::session::Seq>,
    /// Retry sleeps longer than `retry-wait-excessive`'s limit, with their length.
    waits: Vec<(&'a Event, u64)>,
    /// The wrapper's reports of success.
    successes: Vec<(&'a Event, &'a str)>,
}

impl<'a> Marks<'a> {
    fn new(a: &'a Analysis) -> Self {
        let mut marks = Marks {
            runs: Vec::new(),
            waits: Vec::new(),
            successes: Vec::new(),
        };
        for e in &a.events {
            match &e.kind {
                EventKind::RunStart => marks.runs.push(e.seq),
                EventKind::RetryWait(w) if w.delay_ms > super::retry_wait_excessive::EXCESSIVE_MS => {
                    marks.waits.push((e, w.delay_ms));
                }
                EventKind::WrapperStatus {
                    success: true,
                    words,
                } => marks.successes.push((e, words)),
                _ => {}
            }
        }
        marks
    }
}

fn finding(analysis: &Analysis, marks: &Marks<'_>, incident: &Incident<'_>) -> Finding {
    let (event, info) = incident.primary();
    let class = info.name.as_deref();
    let what = match (&event.kind, class) {
        (EventKind::ProcessCrash(_), _) => format!(
            "the agent process crashed ({})",
            class.unwrap_or("uncaught error")
        ),
        (EventKind::Log { service, .. }, Some(c)) => format!("{service} failed with {c}"),
        (_, Some("MessageAbortedError")) => {
            "the reply was aborted (MessageAbortedError), as a user's stop does".to_owned()
        }
        (_, Some(c)) => format!("the session failed with {c}"),
        (_, None) => "a request of the session failed".to_owned(),
    };
    let mut message = what;
    if let Some(w) = wrapped(info) {
        message.push_str(&format!(" wrapping {w}"));
    }
    match retryable(info).filter(|_| !aborted(info)) {
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
    if aborted(info) {
        if !incident.fatal {
            message.push_str("; the session went on afterwards");
        }
    } else if incident.fatal {
        let after = incident.aftermath_words();
        if after.is_empty() {
            message.push_str("; the session never recovered");
        } else {
            message.push_str(&format!("; the session never recovered, then: {after}"));
        }
    } else {
        message.push_str("; the session continued afterwards");
    }

    let severity = if aborted(info) {
        // The user stopped the reply (or a client stopped it on their behalf): not a failure.
        Severity::Info
    } else if incident.fatal {
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
    for (span, words) in &info.context {
        f = f.also(Some(*span), words.clone());
    }
    f = notes(analysis, marks, incident, event, info, f);
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
    } else if let Some(help) = fatal_help(info) {
        f = f.help(help);
    }
    f
}

/// An abort (`MessageAbortedError`): what OpenCode records when the reply is stopped on purpose
/// (the user's stop, `POST /session/:id/abort`).
pub(super) fn aborted(info: &ErrorInfo) -> bool {
    info.name.as_deref() == Some("MessageAbortedError")
}

/// What to do about a fatal error, when its class or message says.
fn fatal_help(info: &ErrorInfo) -> Option<String> {
    let text = format!(
        "{} {}",
        info.name.as_deref().unwrap_or_default(),
        info.message
    );
    if text.contains("ModelNotFound") {
        return Some("the provider does not list that model: check the model name and the provider's configuration".into());
    }
    if retries_exhausted(info) {
        return Some("the provider kept failing until the retries ran out: check its status and rate limits, or switch provider or model".into());
    }
    match status_code(&info.data) {
        Some(code) if (400..500).contains(&code) => Some(format!(
            "the provider rejected the request (HTTP {code}) and retrying will not help: its message says what to change"
        )),
        Some(code) if code >= 500 => Some(format!(
            "the provider failed (HTTP {code}); retry later or switch provider"
        )),
        _ => None,
    }
}

/// The retries of the AI SDK ran out (`AI_RetryError: Failed after 3 attempts`).
fn retries_exhausted(info: &ErrorInfo) -> bool {
    let text = format!(
        "{} {} {}",
        info.name.as_deref().unwrap_or_default(),
        info.wrapped.as_deref().unwrap_or_default(),
        info.message
    );
    text.contains("AI_RetryError")
        || text.contains("Failed after")
        || text.contains("maxRetriesExceeded")
}

/// The HTTP status an error carries (`statusCode`, also inside `data`, `error` or `lastError`).
fn status_code(v: &serde_json::Value) -> Option<u64> {
    ["statusCode", "status"]
        .iter()
        .find_map(|k| v.get(*k).and_then(serde_json::Value::as_u64))
        .or_else(|| {
            ["data", "error", "lastError"]
                .iter()
                .find_map(|k| v.get(*k).and_then(status_code))
        })
}

/// The note on the retryable errors the provider answered with before the error, if any.
fn retried_note(retried: &[(&Event, &ErrorInfo)]) -> Option<String> {
    let (_, first) = retried.first()?;
    let code = status_code(&first.data)
        .map(|c| format!(" {c}"))
        .unwrap_or_default();
    let what = first.name.as_deref().unwrap_or("error");
    let msg = first
        .data
        .pointer("/data/error/message")
        .or_else(|| first.data.pointer("/data/message"))
        .and_then(serde_json::Value::as_str)
        .or(Some(first.message.as_str()).filter(|m| !m.is_empty()))
        .map(|m| format!(": {}", crate::session::first_line(m, 100)))
        .unwrap_or_default();
    // Each failed attempt is logged once per service (the prompt loop and the processor).
    let mut per_service: std::collections::BTreeMap<&str, usize> = Default::default();
    for (e, _) in retried {
        let service = match &e.kind {
            EventKind::Log { service, .. } => service.as_str(),
            _ => "",
        };
        *per_service.entry(service).or_default() += 1;
    }
    let times = per_service.values().copied().max().unwrap_or(retried.len());
    let times = if times == 1 {
        "once".to_owned()
    } else {
        format!("{times} times")
    };
    Some(format!(
        "before it, the provider answered with a retryable error {times} ({what}{code}{msg}) and the agent retried"
    ))
}

/// Notes that tie the error to what surrounds it: the provider errors retried before it, retries
/// running out, a long retry wait before a timeout, a wrapper that still reported success.
fn notes(
    analysis: &Analysis,
    marks: &Marks<'_>,
    incident: &Incident<'_>,
    event: &Event,
    info: &ErrorInfo,
    mut f: Finding,
) -> Finding {
    let retried: Vec<(&Event, &ErrorInfo)> = incident
        .errors()
        .filter(|(e, i)| e.seq < event.seq && i.retryable == Some(true))
        .collect();
    if let Some(note) = retried_note(&retried) {
        f = f.note(note);
    }
    if let Some((e, _)) = incident
        .errors()
        .find(|(_, i)| i.data.get("is_error") == Some(&serde_json::Value::Bool(true)))
    {
        f = f
            .also(Some(e.span), "the run's final result: is_error")
            .note("the run's final `result` record has `is_error: true`: the run failed, whatever its `subtype` says");
    }
    if info.data.get("synthetic") == Some(&serde_json::Value::Bool(true)) {
        f = f.note("the client wrote this record itself to show the error (`isApiErrorMessage`, model `<synthetic>`): it is no model output, and it is left out of the requests the client rebuilds on resume");
    }
    if incident.fatal && retries_exhausted(info) {
        let died = matches!(event.kind, EventKind::ProcessCrash(_))
            || incident
                .events
                .iter()
                .any(|e| matches!(e.kind, EventKind::ProcessCrash(_)));
        f = f.note(if died {
            "the retries were exhausted and the process died of the error (an unhandled rejection)"
        } else {
            "the retries were exhausted"
        });
    }
    if info.message.contains("timed out") {
        // The last long retry sleep since the last run started before the error.
        let runs = &marks.runs;
        let run_start = match runs.partition_point(|s| *s < event.seq) {
            0 => 0,
            k => runs[k - 1],
        };
        let waits = &marks.waits;
        let before = waits.partition_point(|(e, _)| e.seq < event.seq);
        if let Some(&(wait, ms)) = before
            .checked_sub(1)
            .map(|k| &waits[k])
            .filter(|(e, _)| e.seq > run_start)
        {
            let (span, d) = match &wait.kind {
                EventKind::RetryWait(w) => (
                    w.delay_span.unwrap_or(wait.span.head()),
                    super::retry_wait_excessive::duration(ms),
                ),
                _ => (wait.span.head(), String::new()),
            };
            f = f
                .also(Some(span), format!("a retry sleep of {d} was pending"))
                .note(format!(
                    "the request was still waiting on a rate-limit retry sleep of {d} when it timed out (see retry-wait-excessive)"
                ));
        }
    }
    if incident.fatal
        && let Some(&(_, words)) = (marks.successes)
            .get(marks.successes.partition_point(|(e, _)| e.seq <= event.seq))
    {
        let no_step = incident.session.is_none_or(|id| {
            analysis
                .session(id)
                .is_none_or(|s| {
                    s.forgotten.steps_started == 0
                        && s.messages.iter().all(|m| m.count("step-start") == 0)
                })
        });
        let why = if no_step {
            "although no step ever started"
        } else {
            "although the session had failed"
        };
        f = f.note(format!(
            "the wrapper still reported success (`{words}`) {why}"
        ));
    }
    f
}
