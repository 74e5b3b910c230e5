//! Grouping a log's error events into incidents.
//!
//! One failure usually leaves several traces: the processor logs the exception, the session's
//! error event repeats it, the runtime prints it again uncaught. Errors of one session with no part
//! activity between them are one *incident*. An incident is *fatal* when the session never shows
//! activity again (cleanup writes of "Tool execution aborted" do not count: they are the
//! aftermath, not a recovery).

use crate::model::TOOL_ABORTED;
use crate::session::{Analysis, ErrorInfo, Event, EventKind, LogLevel, Seq};
use crate::source::Span;

/// Errors that belong together, and what came after them.
#[derive(Debug)]
pub struct Incident<'a> {
    pub events: Vec<&'a Event>,
    pub session: Option<&'a str>,
    /// The session showed no further activity.
    pub fatal: bool,
    /// What followed, in order: ("cancel", span), ("idle", span), …
    pub aftermath: Vec<(String, Span)>,
}

impl<'a> Incident<'a> {
    /// The event that best names the failure: the session's error, else the first logged error
    /// that was not retried, else a crash (retries ran out), else a retried error, else whatever
    /// came first.
    pub fn primary(&self) -> (&'a Event, &'a ErrorInfo) {
        let pick =
            |want: fn(&EventKind) -> bool| self.events.iter().copied().find(|e| want(&e.kind));
        let final_log = self.events.iter().copied().find(|e| {
            matches!(e.kind, EventKind::Log { .. })
                && error_of(e).is_some_and(|i| i.retryable != Some(true))
        });
        let event = pick(|k| matches!(k, EventKind::SessionError(_)))
            .or(final_log)
            .or_else(|| pick(|k| matches!(k, EventKind::ProcessCrash(_))))
            .or_else(|| pick(|k| matches!(k, EventKind::Log { .. })))
            .unwrap_or(self.events[0]);
        (event, error_of(event).unwrap_or(&EMPTY))
    }

    /// Every error of the incident with its event.
    pub fn errors(&self) -> impl Iterator<Item = (&'a Event, &'a ErrorInfo)> + '_ {
        self.events
            .iter()
            .filter_map(|e| error_of(e).map(|i| (*e, i)))
    }

    /// The aftermath in words: "cancel, idle".
    pub fn aftermath_words(&self) -> String {
        let words: Vec<&str> = self.aftermath.iter().map(|(w, _)| w.as_str()).collect();
        words.join(", ")
    }
}

static EMPTY: ErrorInfo = ErrorInfo {
    name: None,
    wrapped: None,
    message: String::new(),
    retryable: None,
    data: serde_json::Value::Null,
    message_span: None,
    payload: None,
    embedded_event: None,
    context: Vec::new(),
};

/// The error an event carries, if it is an incident error.
pub fn error_of(e: &Event) -> Option<&ErrorInfo> {
    match &e.kind {
        EventKind::SessionError(i) | EventKind::ProcessCrash(i) | EventKind::RawError(i) => Some(i),
        EventKind::Log {
            level: LogLevel::Error,
            service,
            error: Some(i),
            ..
        } if service.starts_with("session") => Some(i),
        _ => None,
    }
}

/// Seqs of part writes that show a session alive (cleanup aborts excluded), by session id.
struct Activity {
    by_session: std::collections::HashMap<String, Vec<Seq>>,
    all: Vec<Seq>,
}

impl Activity {
    fn new(a: &Analysis) -> Self {
        let mut by_session: std::collections::HashMap<String, Vec<Seq>> = Default::default();
        for (s, _, p) in a.parts() {
            let cleanup = p.part.tool().and_then(|t| t.state.error_text()) == Some(TOOL_ABORTED);
            let last = p.history.len().saturating_sub(1);
            let seqs = by_session.entry(s.id.clone()).or_default();
            for (i, o) in p.history.iter().enumerate() {
                if !(cleanup && i == last && o.status.as_deref() == Some("error")) {
                    seqs.push(o.seq);
                }
            }
        }
        let mut all = Vec::new();
        for seqs in by_session.values_mut() {
            seqs.sort_unstable();
            all.extend_from_slice(seqs);
        }
        all.sort_unstable();
        Self { by_session, all }
    }

    fn of(&self, session: Option<&str>) -> &[Seq] {
        match session {
            Some(id) => self.by_session.get(id).map_or(&[], Vec::as_slice),
            None => &self.all,
        }
    }

    /// The first activity after `seq`.
    fn next_after(&self, session: Option<&str>, seq: Seq) -> Option<Seq> {
        let seqs = self.of(session);
        seqs.get(seqs.partition_point(|s| *s <= seq)).copied()
    }
}

/// The incidents of an analysis, in order.
pub fn incidents(a: &Analysis) -> Vec<Incident<'_>> {
    if !a.events.iter().any(|e| error_of(e).is_some()) {
        return Vec::new();
    }
    let activity = Activity::new(a);
    let mut out: Vec<Incident<'_>> = Vec::new();
    let mut boundary: Seq = 0;
    for e in &a.events {
        if matches!(e.kind, EventKind::RunStart | EventKind::Prompt) {
            boundary = e.seq;
            continue;
        }
        if error_of(e).is_none() {
            continue;
        }
        let session = e.session.as_deref();
        let joins = out.last().is_some_and(|inc| {
            let last = inc.events.last().map_or(0, |l| l.seq);
            let same_session = inc.session.is_none() || session.is_none() || inc.session == session;
            let quiet = activity
                .next_after(session.or(inc.session), last)
                .is_none_or(|n| n > e.seq);
            same_session && last > boundary && quiet
        });
        match out.last_mut() {
            Some(inc) if joins => {
                inc.events.push(e);
                if inc.session.is_none() {
                    inc.session = session;
                }
            }
            _ => out.push(Incident {
                events: vec![e],
                session,
                fatal: false,
                aftermath: Vec::new(),
            }),
        }
    }
    // The aftermath's words, each with the timeline positions where it happens, and the
    // positions of new runs: an incident's aftermath is then a lookup per word (a walk to the end
    // of the timeline per fatal incident was quadratic in a log of many failing sessions).
    let mut words: Vec<(String, Vec<usize>)> = Vec::new();
    let mut word_index: crate::FastMap<String, usize> = crate::FastMap::default();
    let mut runs: Vec<usize> = Vec::new();
    for (k, e) in a.events.iter().enumerate() {
        let word = match &e.kind {
            EventKind::RunStart => {
                runs.push(k);
                continue;
            }
            kind => match aftermath_word(kind) {
                Some(word) => word,
                None => continue,
            },
        };
        let w = *word_index.entry(word).or_insert_with_key(|word| {
            words.push((word.clone(), Vec::new()));
            words.len() - 1
        });
        words[w].1.push(k);
    }
    for inc in &mut out {
        let last = inc.events.last().map_or(0, |e| e.seq);
        let next_activity = activity.next_after(inc.session, last);
        inc.fatal = next_activity.is_none();
        // What followed the error that names the failure (later traces of it included), up to
        // the session's next activity, and up to a new run, which ends it.
        let from = inc.primary().0.seq;
        let start = a.events.partition_point(|e| e.seq <= from);
        let mut end =
            next_activity.map_or(a.events.len(), |n| a.events.partition_point(|e| e.seq <= n));
        let run = runs.get(runs.partition_point(|&k| k < start)).copied();
        let run = run.filter(|&k| k < end);
        if let Some(k) = run {
            end = k;
        }
        let mut found: Vec<(usize, &str)> = words
            .iter()
            .filter_map(|(word, at)| {
                let k = *at.get(at.partition_point(|&k| k < start))?;
                (k < end).then_some((k, word.as_str()))
            })
            .collect();
        found.sort_unstable();
        for (k, word) in found {
            inc.aftermath.push((word.to_owned(), a.events[k].span));
        }
        if let Some(k) = run {
            inc.aftermath
                .push(("a new agent run".into(), a.events[k].span));
        }
    }
    out
}

/// The word an event adds to an incident's aftermath (a new run aside, which ends it).
fn aftermath_word(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::Cancel => "cancel".to_owned(),
        EventKind::Idle => "idle".to_owned(),
        EventKind::ProcessCrash(i) => {
            format!("process crash ({})", i.name.as_deref().unwrap_or("error"))
        }
        EventKind::RawError(i) => format!("uncaught {}", i.name.as_deref().unwrap_or("error")),
        EventKind::WrapperError { error_type, .. } => {
            format!("the wrapper reported {error_type}")
        }
        EventKind::WrapperStatus { success: true, .. } => {
            "the wrapper still reported success".to_owned()
        }
        EventKind::WrapperStatus { words, .. } => format!("the wrapper reported `{words}`"),
        _ => return None,
    })
}

/// Whether an error is a stream parse error (one unparseable SSE event).
pub fn is_stream_parse_error(info: &ErrorInfo) -> bool {
    let name_says = info
        .name
        .as_deref()
        .is_some_and(|n| n.contains("JSONParseError"));
    name_says
        || info.message.contains("AI_JSONParseError")
        || info.message.contains("JSON parsing failed")
}

/// Whether an event ends a step or tool: an error (the session's error, a crash or a logged
/// processor error, `false`) or a stream abort (`true`). [`ending`] words it; this is what the
/// index of endings is built from, without wording every event of the timeline.
fn ends(e: &Event) -> Option<bool> {
    match &e.kind {
        EventKind::StreamUnhandled { event_type, .. } => (event_type == "abort").then_some(true),
        EventKind::SessionError(_) | EventKind::ProcessCrash(_) => Some(false),
        EventKind::Log { .. } => error_of(e).map(|_| false),
        _ => None,
    }
}

/// What ends a step or tool, for [`Endings::what_ended`]: an error (the session's error, a
/// crash or a logged processor error) or a stream abort (`true`), with its label.
fn ending(e: &Event) -> Option<(bool, String)> {
    match &e.kind {
        EventKind::StreamUnhandled { event_type, .. } if event_type == "abort" => Some((
            true,
            "the stream was aborted here (AI SDK `abort` event, not handled)".to_owned(),
        )),
        EventKind::SessionError(i) => {
            Some((false, format!("the session failed here: {}", i.title())))
        }
        EventKind::ProcessCrash(i) => {
            Some((false, format!("the process crashed here: {}", i.title())))
        }
        EventKind::Log { service, .. } => {
            let i = error_of(e)?;
            Some((false, format!("{service} failed here: {}", i.title())))
        }
        _ => None,
    }
}

/// Some events of the timeline by session, gathered in one walk: "the first such event of this
/// session after a point" is then a lookup, where a walk of the rest of the timeline per
/// question is quadratic in a log of many sessions.
pub struct EventIndex<'a> {
    events: &'a [Event],
    /// Per session (`None`: the events without one): positions in the timeline, in order.
    by_session: crate::FastMap<Option<&'a str>, Vec<usize>>,
}

impl<'a> EventIndex<'a> {
    /// The events of `a` that `keep` keeps.
    pub fn new(a: &'a Analysis, keep: impl Fn(&Event) -> bool) -> Self {
        let mut by_session: crate::FastMap<_, Vec<usize>> = crate::FastMap::default();
        for (k, e) in a.events.iter().enumerate() {
            if keep(e) {
                by_session.entry(e.session.as_deref()).or_default().push(k);
            }
        }
        EventIndex {
            events: &a.events,
            by_session,
        }
    }

    /// The first kept event after `after` (and before `before`, when given) of `session`, or,
    /// `with_sessionless`, of `session` or of none.
    pub fn first(
        &self,
        session: &str,
        with_sessionless: bool,
        after: Seq,
        before: Option<Seq>,
    ) -> Option<&'a Event> {
        let first_in = |key: Option<&str>| {
            let positions = self.by_session.get(&key)?;
            let k = positions.partition_point(|&i| self.events[i].seq <= after);
            positions.get(k).copied()
        };
        let sessionless = with_sessionless.then(|| first_in(None)).flatten();
        let first = first_in(Some(session))
            .into_iter()
            .chain(sessionless)
            .min()?;
        let e = &self.events[first];
        before.is_none_or(|b| e.seq < b).then_some(e)
    }
}

/// The events that end a step or tool, by session (see [`EventIndex`]).
pub struct Endings<'a> {
    errors: EventIndex<'a>,
    aborts: EventIndex<'a>,
}

impl<'a> Endings<'a> {
    pub fn new(a: &'a Analysis) -> Self {
        Endings {
            errors: EventIndex::new(a, |e| ends(e) == Some(false)),
            aborts: EventIndex::new(a, |e| ends(e) == Some(true)),
        }
    }

    /// What ended a step or tool: among the events after `after` (and before `before`, when
    /// given) in `session`, the first error (the session's error, a crash or a logged processor
    /// error) and the first stream abort, each with a label.
    pub fn what_ended(
        &self,
        session: &str,
        after: Seq,
        before: Option<Seq>,
    ) -> Vec<(&'a Event, String)> {
        let error = self.errors.first(session, true, after, before);
        let abort = self.aborts.first(session, true, after, before);
        let mut out: Vec<(&Event, String)> = (error.into_iter().chain(abort))
            .filter_map(|e| Some((e, ending(e)?.1)))
            .collect();
        out.sort_by_key(|(e, _)| e.seq);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::LogLevel;
    use crate::source::{FileId, Span};

    /// An error of this class.
    fn info(name: &str) -> Box<ErrorInfo> {
        Box::new(ErrorInfo {
            name: Some(name.into()),
            ..ErrorInfo::default()
        })
    }

    /// The walk [`Endings`] replaces: the events after `after` (and before `before`) in
    /// `session` or without one, the first error and the first abort.
    fn walked<'a>(
        a: &'a Analysis,
        session: &str,
        after: Seq,
        before: Option<Seq>,
    ) -> Vec<(&'a Event, String)> {
        let (mut error, mut abort) = (None, None);
        for e in a
            .events_after(after)
            .take_while(|e| before.is_none_or(|b| e.seq < b))
            .filter(|e| e.session.as_deref().is_none_or(|s| s == session))
        {
            match ending(e) {
                Some((true, label)) => abort = abort.or(Some((e, label))),
                Some((false, label)) => error = error.or(Some((e, label))),
                None => {}
            }
        }
        let mut out: Vec<_> = error.into_iter().chain(abort).collect();
        out.sort_by_key(|(e, _)| e.seq);
        out
    }

    /// The walk the aftermath's lookups replace (`activity` ends it as the session's next
    /// activity does).
    fn walked_aftermath(
        a: &Analysis,
        from: Seq,
        next_activity: Option<Seq>,
    ) -> Vec<(String, Span)> {
        let mut out: Vec<(String, Span)> = Vec::new();
        for e in a.events_after(from) {
            if next_activity.is_some_and(|n| e.seq > n) {
                break;
            }
            if matches!(e.kind, EventKind::RunStart) {
                out.push(("a new agent run".into(), e.span));
                break;
            }
            let Some(word) = aftermath_word(&e.kind) else {
                continue;
            };
            if !out.iter().any(|(w, _)| *w == word) {
                out.push((word, e.span));
            }
        }
        out
    }

    /// Aftermaths looked up per word are what a walk of the timeline finds, with runs, repeated
    /// words, shared positions, and activity that ends them.
    #[test]
    fn aftermaths_are_what_a_walk_finds() {
        use crate::model::Part;
        use crate::session::{Message, Observation, PartRecord, Session};
        let mut a = Analysis::new(FileId(0), crate::testing::formats::AGENT_LOG);
        for n in 0..90u64 {
            let kind = match n % 11 {
                0 | 6 => EventKind::SessionError(info("A")),
                1 => EventKind::Idle,
                2 => EventKind::Cancel,
                3 => EventKind::ProcessCrash(info(if n % 2 == 0 { "X" } else { "Y" })),
                4 if n % 3 == 0 => EventKind::RunStart,
                5 => EventKind::WrapperStatus {
                    success: n % 2 == 0,
                    words: "w".into(),
                },
                7 => EventKind::Idle,
                _ => EventKind::Prompt,
            };
            let seq = n - n % 5 / 4;
            let session = Some(if n % 4 == 0 { "ses_b" } else { "ses_a" }.to_owned());
            let span = Span::new(FileId(0), n, 1);
            a.events.push(Event {
                seq,
                span,
                session,
                kind,
            });
        }
        // Part writes now and then: the sessions' activity.
        let writes = |seqs: &[Seq]| PartRecord {
            part: Part::from_value(&serde_json::json!({"id": "p", "type": "text", "text": "t"})),
            history: (seqs.iter())
                .map(|&seq| Observation {
                    seq,
                    span: Span::new(FileId(0), seq, 1),
                    status: None,
                    status_span: None,
                })
                .collect(),
        };
        for (id, seqs) in [("ses_a", &[9, 30, 31, 70][..]), ("ses_b", &[44][..])] {
            a.sessions.push(Session {
                id: id.into(),
                messages: vec![Message {
                    id: "msg_1".into(),
                    parts: vec![writes(seqs)],
                    ..Message::default()
                }],
                ..Session::default()
            });
        }
        let activity = Activity::new(&a);
        let found = incidents(&a);
        assert!(found.len() > 5, "{}", found.len());
        for inc in &found {
            let last = inc.events.last().map_or(0, |e| e.seq);
            let next = activity.next_after(inc.session, last);
            let walk = walked_aftermath(&a, inc.primary().0.seq, next);
            let key = |v: &[(String, Span)]| -> Vec<(String, u64)> {
                v.iter().map(|(w, s)| (w.clone(), s.offset)).collect()
            };
            assert_eq!(key(&inc.aftermath), key(&walk), "{:?}", inc.events[0].seq);
        }
        // The cases are there: long aftermaths, runs that end them, incidents that are not fatal.
        assert!(found.iter().any(|i| i.aftermath.len() >= 3));
        assert!(
            found
                .iter()
                .any(|i| i.aftermath.iter().any(|(w, _)| w == "a new agent run"))
        );
        assert!(found.iter().any(|i| !i.fatal) && found.iter().any(|i| i.fatal));
    }

    #[test]
    fn endings_answer_what_a_walk_of_the_timeline_answers() {
        let mut a = Analysis::new(FileId(0), crate::testing::formats::AGENT_LOG);
        let sessions = [Some("ses_a"), Some("ses_b"), None];
        for seq in 0..60u64 {
            let kind = match seq % 7 {
                0 => EventKind::SessionError(info("A")),
                1 => EventKind::StreamUnhandled {
                    event_type: "abort".into(),
                    reason: None,
                },
                2 => EventKind::ProcessCrash(info("B")),
                3 => EventKind::Idle,
                4 => EventKind::Log {
                    level: LogLevel::Error,
                    service: "session.processor".into(),
                    message: "m".into(),
                    error: Some(info("C")),
                },
                5 => EventKind::Log {
                    level: LogLevel::Warn,
                    service: "session.processor".into(),
                    message: "m".into(),
                    error: Some(info("D")),
                },
                _ => EventKind::RawError(info("E")),
            };
            // Two events share some positions, as one record can make two.
            let seq = seq - seq % 5 / 4;
            let session = sessions[(seq as usize * 7 / 3) % 3].map(str::to_owned);
            let span = Span::new(FileId(0), seq, 1);
            a.events.push(Event {
                seq,
                span,
                session,
                kind,
            });
        }
        let endings = Endings::new(&a);
        // The index is built from `ends`, which says what `ending` says without the words.
        for e in &a.events {
            assert_eq!(ends(e), ending(e).map(|(abort, _)| abort), "{:?}", e.kind);
        }
        let key = |v: Vec<(&Event, String)>| -> Vec<(Seq, String)> {
            v.into_iter().map(|(e, l)| (e.seq, l)).collect()
        };
        for session in ["ses_a", "ses_b", "ses_c"] {
            for after in 0..62 {
                for before in [None, Some(after + 1), Some(after + 3), Some(after + 20)] {
                    let found = endings.what_ended(session, after, before);
                    let walk = walked(&a, session, after, before);
                    assert_eq!(
                        found
                            .iter()
                            .map(|(e, _)| *e as *const Event)
                            .collect::<Vec<_>>(),
                        walk.iter()
                            .map(|(e, _)| *e as *const Event)
                            .collect::<Vec<_>>(),
                        "{session} {after} {before:?}"
                    );
                    assert_eq!(key(found), key(walk));
                }
            }
        }
    }
}
