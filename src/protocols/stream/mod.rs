//! Replay of stream captures: provider events → normalized stream parts → the agent's processor.
//!
//! [`StreamReplay`] receives the payloads of one stream (from `crate::protocols::capture`), recognises the
//! protocol from the first payload that tells, decodes each payload into normalized parts
//! ([`part`]) with the protocol's decoder, and runs one or two processors ([`Profile`]) over the
//! parts, each writing its own [`Analysis`]. Stream-level facts — events that could not be
//! decoded, provider errors, protocol order, the terminal event — are the same for every profile
//! and recorded in each analysis; what the processor did (skipped, threw, dropped a tool error,
//! cleaned up) is its own.

pub mod ag_ui;
pub mod anthropic;
pub mod bedrock;
pub mod cohere;
pub mod envelope;
pub mod gemini;
pub mod openai_chat;
pub mod openai_responses;
pub mod opencode;
pub mod part;
pub mod protocol;
pub mod store;
pub mod tanstack;
pub mod ui_book;
pub mod ui_stream;

use std::collections::{HashMap, HashSet};
use std::io::Read;

use serde_json::Value;

use crate::core::Format;
use crate::ingest::IngestError;
use crate::json::position::text_offset;
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, cap_strings};
use crate::model::schema::{IssueKind, SchemaIssue};
use crate::protocols::capture::{Envelope, Framing, Locator, Payload};
use crate::protocols::sse::NamedWithoutData;
use crate::session::{
    Alternative, Analysis, BodyCut, ErrorInfo, EventKind, NotUnderstood, PartRecord, PayloadIssues,
    PayloadProblem, Seq, StreamOutcome, Undecodable,
};
use crate::source::Span;
use part::{ErrorKind, PartKind, StreamError};
use protocol::{Decoder, Focus, Out, Protocol, Rejected, detect, sniff_type};

/// Longest payload text kept in a finding.
const MAX_PAYLOAD_TEXT: usize = 4096;
/// Payloads buffered while the protocol is not known yet.
const MAX_UNDETECTED: usize = 64;

/// The processor profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// OpenCode's classic processor (v1.1–v1.2): throws on a stream `error`, drops tool errors
    /// for pending tools, no step-finish before a retry.
    Opencode,
    /// OpenCode with PR #16751's three layers, skipping undecodable events (as codex does).
    OpencodeFixed,
    /// link-assistant/agent ≤ 0.8.16: writes tool errors as `status: "failed"`.
    #[value(name = "agent-0.8")]
    #[serde(rename = "agent-0.8")]
    Agent08,
    /// TanStack AI before PR #727: a failed tool's tool-call part stays `input-complete`.
    #[value(name = "tanstack-pre-727")]
    #[serde(rename = "tanstack-pre-727")]
    TanstackPre727,
    /// TanStack AI with the `error` terminal of `ToolCallState`.
    Tanstack,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Opencode => "opencode",
            Profile::OpencodeFixed => "opencode-fixed",
            Profile::Agent08 => "agent-0.8",
            Profile::TanstackPre727 => "tanstack-pre-727",
            Profile::Tanstack => "tanstack",
        }
    }
}

/// What a processor receives for one part.
pub struct Applied<'a> {
    pub seq: Seq,
    /// The whole event.
    pub span: Span,
    /// The value the part comes from, when located.
    pub focus: Option<Span>,
    pub part: &'a PartKind,
    /// For an `error` part: the error as the agent would log it.
    pub error: Option<&'a ErrorInfo>,
}

/// A stream processor writing its own analysis.
pub trait Processor {
    #[allow(
        dead_code,
        reason = "each processor names its profile; the driver knows it already"
    )]
    fn profile(&self) -> Profile;
    fn apply(&mut self, a: &Applied<'_>);
    /// Records a stream-level event.
    fn event(&mut self, seq: Seq, span: Span, kind: EventKind);
    /// The stream ended after `total` events, the last at `last`; `cut`: the capture stops there
    /// but the stream went on (a body its logger cut), so nothing is closed.
    fn finish(self: Box<Self>, last: (Seq, Span), total: u64, cut: bool) -> Analysis;
}

fn processor(
    profile: Profile,
    file: crate::source::FileId,
    format: Format,
    session: &str,
) -> Box<dyn Processor> {
    match profile {
        Profile::Opencode | Profile::OpencodeFixed | Profile::Agent08 => {
            Box::new(opencode::Opencode::new(profile, file, format, session))
        }
        Profile::TanstackPre727 | Profile::Tanstack => {
            Box::new(tanstack::Tanstack::new(profile, file, format, session))
        }
    }
}

/// How to replay a stream.
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// The profiles to run: the first is the one diagnosed; a second one is compared with it.
    pub profiles: Vec<Profile>,
    /// Force a protocol instead of recognising it.
    pub protocol: Option<Protocol>,
    /// A protocol to assume when the payloads do not tell (from a request URL).
    pub hint: Option<Protocol>,
    pub session_id: String,
    pub format: Format,
}

impl StreamOptions {
    pub fn new(format: Format, profiles: Vec<Profile>) -> Self {
        Self {
            profiles,
            protocol: None,
            hint: None,
            session_id: "capture".into(),
            format,
        }
    }
}

struct OwnedPayload {
    index: u64,
    event_type: Option<String>,
    data: String,
    start: u64,
    end: u64,
    line: u64,
    segments: Vec<(usize, u64)>,
    unterminated: bool,
}

impl OwnedPayload {
    fn of(p: &Payload<'_>) -> Self {
        Self {
            index: p.index,
            event_type: p.event_type.map(str::to_owned),
            data: p.data.to_owned(),
            start: p.start,
            end: p.end,
            line: p.line,
            segments: p.segments.to_vec(),
            unterminated: p.unterminated,
        }
    }

    fn view(&self) -> Payload<'_> {
        Payload {
            index: self.index,
            event_type: self.event_type.as_deref(),
            data: &self.data,
            start: self.start,
            end: self.end,
            line: self.line,
            segments: &self.segments,
            unterminated: self.unterminated,
        }
    }
}

/// One stream's replay.
pub struct StreamReplay {
    locator: Locator,
    options: StreamOptions,
    decoder: Option<Box<dyn Decoder>>,
    pending: Vec<OwnedPayload>,
    processors: Vec<Box<dyn Processor>>,
    out: Out,
    events: u64,
    last: Option<(Seq, Span)>,
    terminal: Option<(String, Span)>,
    unterminated: Option<Span>,
    finish_reason: Option<String>,
    schema_issues: Vec<PayloadIssues>,
    fatal: bool,
    /// A step started and has not finished (to decide whether the stream finished).
    step_open: bool,
    last_step_reason: Option<String>,
    invalid: u64,
    /// Payloads that were JSON and reached the decoder.
    decoded: u64,
    /// Of those, the ones the protocol rejected or found nothing of its own in; the first one.
    unfit: u64,
    first_unfit: Option<(Seq, Span)>,
    /// Frames of a binary capture that could not be read (a bad CRC, the input ending inside).
    undecodable: Vec<Undecodable>,
    /// The body was cut by its logger: the last event is not checked.
    cut: Option<BodyCut>,
    /// The first and last `event:` field groups without data (the stream's only sign when no
    /// data came).
    named_without_data: [Option<NamedWithoutData>; 2],
}

impl StreamReplay {
    pub fn new(locator: Locator, options: StreamOptions) -> Self {
        let file = locator.file();
        let processors = options
            .profiles
            .iter()
            .map(|p| processor(*p, file, options.format, &options.session_id))
            .collect();
        let decoder = options.protocol.map(new_decoder);
        Self {
            locator,
            options,
            decoder,
            pending: Vec::new(),
            processors,
            out: Out::default(),
            events: 0,
            last: None,
            terminal: None,
            unterminated: None,
            finish_reason: None,
            schema_issues: Vec::new(),
            fatal: false,
            step_open: false,
            last_step_reason: None,
            invalid: 0,
            decoded: 0,
            unfit: 0,
            first_unfit: None,
            undecodable: Vec::new(),
            cut: None,
            named_without_data: [None, None],
        }
    }

    /// The body was cut by its logger after `kept` bytes (of `total` characters).
    pub fn set_cut(&mut self, cut: BodyCut) {
        self.cut = Some(cut);
    }

    /// The framing saw `event:` lines without data (the standard dispatches nothing for them).
    pub fn set_named_without_data(
        &mut self,
        first: Option<NamedWithoutData>,
        last: Option<NamedWithoutData>,
    ) {
        self.named_without_data = [first, last];
    }

    /// Handles one payload.
    pub fn payload(&mut self, p: &Payload<'_>) {
        self.events += 1;
        let span = self.locator.span(p.start, p.end);
        self.last = Some((p.index, span));
        if p.unterminated {
            self.unterminated = Some(span);
            if self.cut.is_some() {
                // The logger cut this event: it is not the stream's.
                return;
            }
        }
        if self.decoder.is_none() {
            let found = detect(p.data, p.event_type);
            match found {
                Some(proto) => {
                    self.decoder = Some(new_decoder(proto));
                    let pending = std::mem::take(&mut self.pending);
                    for q in &pending {
                        self.decode(&q.view());
                    }
                }
                None if self.pending.len() < MAX_UNDETECTED => {
                    self.pending.push(OwnedPayload::of(p));
                    return;
                }
                None => {
                    let proto = self.options.hint.unwrap_or(Protocol::OpenAiChat);
                    self.decoder = Some(new_decoder(proto));
                    let pending = std::mem::take(&mut self.pending);
                    for q in &pending {
                        self.decode(&q.view());
                    }
                }
            }
        }
        self.decode(p);
    }

    /// A frame of a binary capture that could not be read: an event, lost.
    pub fn damaged(&mut self, seq: Seq, range: (u64, u64), reason: String, truncated: bool) {
        self.events += 1;
        let span = self.locator.span(range.0, range.1);
        self.last = Some((seq, span));
        if truncated {
            self.unterminated = Some(span);
        }
        self.undecodable.push(Undecodable {
            span,
            reason,
            at: None,
            truncated,
        });
    }

    fn span_of(&self, p: &Payload<'_>, range: (usize, usize)) -> Span {
        let (s, e) = p.stream_range(range.0, range.1);
        self.locator.span(s, e)
    }

    fn data_span(&self, p: &Payload<'_>) -> Span {
        self.span_of(p, (0, p.data.len()))
    }

    fn focus_span(&self, p: &Payload<'_>, focus: &Focus) -> Option<Span> {
        focus.resolve(p.data).map(|r| self.span_of(p, r))
    }

    fn broadcast(&mut self, seq: Seq, span: Span, kind: EventKind) {
        for proc in &mut self.processors {
            proc.event(seq, span, kind.clone());
        }
    }

    fn decode(&mut self, p: &Payload<'_>) {
        let Some(decoder) = self.decoder.as_mut() else {
            return;
        };
        let seq = p.index;
        let span = self.locator.span(p.start, p.end);
        self.out.clear();
        let result = decoder.decode(p.data, span, &mut self.out);
        let protocol = decoder.protocol();
        match result {
            Ok(()) => {}
            Err(Rejected::Json(e)) => {
                self.invalid += 1;
                let (problem, info) = self.json_problem(p, &e, protocol);
                self.broadcast(seq, span, EventKind::StreamPayload(Box::new(problem)));
                self.reject(seq, span, ErrorKind::JsonParse, "AI_JSONParseError", &info);
                return;
            }
            Err(Rejected::Schema(issues)) => {
                self.decoded += 1;
                if issues.is_empty() {
                    return;
                }
                // An event type the protocol does not have; a field of the wrong type in one of
                // its own events is the protocol's broken event, not another protocol's.
                if issues.iter().any(|i| {
                    matches!(i.kind, IssueKind::UnknownVariant { .. }) && i.path.0.len() <= 1
                }) {
                    self.unfit(seq, span);
                }
                self.invalid += 1;
                let info = self.schema_problem(p, &issues, protocol, seq, span);
                let kind = ErrorKind::TypeValidation;
                self.reject(seq, span, kind, "AI_TypeValidationError", &info);
                return;
            }
        }
        if !envelope::is_done(p.data) {
            self.decoded += 1;
            if self.out.foreign {
                self.unfit(seq, span);
            }
        }
        let out = std::mem::take(&mut self.out);
        for a in &out.anomalies {
            let kind = EventKind::StreamOutOfOrder {
                problem: a.problem.clone(),
                benign: a.benign,
                related: a.related.clone(),
            };
            let at = self.focus_span(p, &a.focus).unwrap_or(span);
            self.broadcast(seq, at, kind);
        }
        let mut provider_infos = Vec::new();
        for e in &out.provider_errors {
            let at = self.focus_span(p, &e.focus);
            let info = ErrorInfo {
                name: Some(e.name.clone()),
                message: e.message.clone(),
                data: cap_strings(&e.data, MAX_KEPT_STRING),
                message_span: at,
                ..ErrorInfo::default()
            };
            self.broadcast(
                seq,
                span,
                EventKind::StreamProviderError(Box::new(info.clone())),
            );
            provider_infos.push(info);
        }
        if out.reopened {
            self.terminal = None;
        }
        if let Some(t) = &out.terminal {
            self.terminal = Some((t.clone(), span));
        }
        if let Some(r) = &out.finish_reason {
            self.finish_reason = Some(r.clone());
        }
        if out.fatal {
            self.fatal = true;
        }
        for (part, focus) in &out.parts {
            let focus_span = match focus {
                Focus::None => None,
                f => self.focus_span(p, f),
            };
            let info =
                match part {
                    PartKind::Error(e) => Some(provider_infos.first().cloned().unwrap_or_else(
                        || ErrorInfo {
                            name: Some(e.name.clone()),
                            message: e.message.clone(),
                            message_span: focus_span,
                            ..ErrorInfo::default()
                        },
                    )),
                    _ => None,
                };
            self.apply(seq, span, focus_span, part, info.as_ref());
        }
        self.out = out;
    }

    fn unfit(&mut self, seq: Seq, span: Span) {
        self.unfit += 1;
        self.first_unfit.get_or_insert((seq, span));
    }

    /// The protocol was recognised (or assumed), not forced, and most of the stream's JSON
    /// payloads do not fit it: the stream is another protocol's, and nothing in it is diagnosed.
    fn not_understood(&self) -> Option<NotUnderstood> {
        if self.options.protocol.is_some() || self.unfit == 0 || self.unfit * 2 <= self.decoded {
            return None;
        }
        let (seq, span) = self.first_unfit?;
        Some(NotUnderstood {
            protocol: self.decoder.as_ref()?.protocol().name().to_owned(),
            unfit: self.unfit,
            of: self.decoded,
            first: (seq, span),
        })
    }

    /// An event the SDK rejects becomes a stream error part, which every processor receives.
    fn reject(&mut self, seq: Seq, span: Span, kind: ErrorKind, name: &str, info: &ErrorInfo) {
        self.out.part(PartKind::Error(StreamError {
            kind,
            name: name.into(),
            message: info.message.clone(),
            retryable: false,
        }));
        let parts = std::mem::take(&mut self.out.parts);
        for (part, _) in &parts {
            self.apply(seq, span, None, part, Some(info));
        }
    }

    /// Hands a part to every processor, with the `streamText` layer's own rules: a tool call
    /// whose input is not JSON is followed by its tool error (not one the provider executed: the
    /// SDK reports no error for those).
    fn apply(
        &mut self,
        seq: Seq,
        span: Span,
        focus: Option<Span>,
        part: &PartKind,
        error: Option<&ErrorInfo>,
    ) {
        match part {
            PartKind::StartStep => self.step_open = true,
            PartKind::FinishStep { reason, .. } => {
                self.step_open = false;
                self.last_step_reason = Some(reason.clone());
            }
            _ => {}
        }
        let a = Applied {
            seq,
            span,
            focus,
            part,
            error,
        };
        for proc in &mut self.processors {
            proc.apply(&a);
        }
        if let PartKind::ToolCall {
            id,
            name,
            input,
            provider_executed: false,
        } = part
            && !input.is_empty()
            && serde_json::from_str::<serde::de::IgnoredAny>(input).is_err()
        {
            let err = PartKind::ToolError {
                id: id.clone(),
                name: name.clone(),
                // The input is quoted as far as any message quotes input: a call's arguments
                // can be as long as the stream.
                error: format!(
                    "Invalid input for tool {name}: JSON parsing failed: Text: {}.",
                    capped(input, MAX_PAYLOAD_TEXT)
                ),
            };
            let a = Applied {
                seq,
                span,
                focus,
                part: &err,
                error: None,
            };
            for proc in &mut self.processors {
                proc.apply(&a);
            }
        }
    }

    fn json_problem(
        &self,
        p: &Payload<'_>,
        e: &serde_json::Error,
        protocol: Protocol,
    ) -> (PayloadProblem, ErrorInfo) {
        let data = p.data;
        let data_span = self.data_span(p);
        let pos = text_offset(data, e.line(), e.column());
        let at = pos.map(|k| self.span_of(p, (k, (k + 1).min(data.len().max(1)))));
        let embedded_at = ["data:", "event:"]
            .iter()
            .filter_map(|m| data.find(m).filter(|k| *k > 0).map(|k| (k, m.len())))
            .min();
        let mut second_value = false;
        let embedded = match embedded_at {
            Some((k, n)) => Some(self.span_of(p, (k, k + n))),
            None => {
                // Two JSON values in one event: `{…}{…}` or `{…}\n{…}` (two data lines).
                let rest = pos.map(|k| data[k..].trim_start());
                if e.to_string().starts_with("trailing characters")
                    && rest.is_some_and(|r| r.starts_with('{'))
                {
                    second_value = true;
                    pos.map(|k| {
                        let skip = data[k..].len() - data[k..].trim_start().len();
                        self.span_of(p, (k + skip, k + skip + 1))
                    })
                } else {
                    None
                }
            }
        };
        let looks_like = sniff_type(data);
        let terminal = looks_like.as_deref().is_some_and(|t| {
            matches!(
                (protocol, t),
                (
                    Protocol::OpenAiResponses,
                    "response.completed" | "response.incomplete" | "response.failed"
                ) | (Protocol::Anthropic, "message_stop")
                    | (Protocol::UiStream, "finish")
                    | (Protocol::AgUi, "RUN_FINISHED" | "RUN_ERROR")
                    | (Protocol::Cohere, "message-end")
            )
        }) || (protocol == Protocol::OpenAiChat
            && data.contains("\"finish_reason\":\""))
            || (protocol == Protocol::Gemini && data.contains("\"finishReason\":\""))
            || (protocol == Protocol::Bedrock && protocol::first_key(data) == Some("messageStop"));
        let text = capped(data, MAX_PAYLOAD_TEXT);
        let reason = e.to_string();
        let problem = PayloadProblem {
            reason: reason.clone(),
            schema: false,
            at,
            payload: (text.clone(), data_span),
            embedded,
            second_value,
            looks_like,
            terminal,
        };
        let info = ErrorInfo {
            name: Some("AI_JSONParseError".into()),
            message: format!(
                "JSON parsing failed: Text: {}.\nError message: {reason}",
                capped(data, 400)
            ),
            retryable: Some(false),
            data: serde_json::json!({"name": "AI_JSONParseError", "text": text}),
            message_span: embedded.or(at).or(Some(data_span.head())),
            payload: Some((text, data_span)),
            embedded_event: embedded.filter(|_| !second_value),
            ..ErrorInfo::default()
        };
        (problem, info)
    }

    fn schema_problem(
        &mut self,
        p: &Payload<'_>,
        issues: &[SchemaIssue],
        protocol: Protocol,
        seq: Seq,
        span: Span,
    ) -> ErrorInfo {
        let data_span = self.data_span(p);
        // One locator for the payload: its arrays are walked once, however many issues they
        // hold. A key that reads as a number is an index, as in `Focus::resolve`.
        let mut locator = crate::json::scan::Locator::new(p.data);
        let located: Vec<(SchemaIssue, Option<Span>)> = issues
            .iter()
            .map(|i| {
                let path: Vec<Seg<'_>> = i
                    .path
                    .0
                    .iter()
                    .map(|s| match s {
                        crate::model::schema::PathSeg::Key(k) => match k.parse::<usize>() {
                            Ok(n) => Seg::Index(n),
                            Err(_) => Seg::Key(k),
                        },
                        crate::model::schema::PathSeg::Index(n) => Seg::Index(*n),
                    })
                    .collect();
                let at = locator
                    .locate(&path)
                    .or_else(|| locator.locate(&path[..path.len().saturating_sub(1)]))
                    .map(|r| self.span_of(p, r));
                (i.clone(), at)
            })
            .collect();
        let what = match sniff_type(p.data) {
            Some(t) => format!("{} event `{t}` (event {})", protocol.name(), seq + 1),
            None => format!("{} chunk (event {})", protocol.name(), seq + 1),
        };
        let first_at = located.first().and_then(|(_, s)| *s);
        let first = issues.first().map(ToString::to_string).unwrap_or_default();
        // Past the cap they are counted (`undecodable events`), not kept.
        if (self.schema_issues.len() as u64) < store::MAX_EVENTS_PER_KIND {
            self.schema_issues.push(PayloadIssues {
                seq,
                what,
                span: data_span,
                issues: located,
                session_id: Some(self.options.session_id.clone()),
                message_id: None,
                part_id: None,
            });
        }
        let problem = PayloadProblem {
            reason: first.clone(),
            schema: true,
            at: first_at,
            payload: (capped(p.data, MAX_PAYLOAD_TEXT), data_span),
            embedded: None,
            second_value: false,
            looks_like: sniff_type(p.data),
            terminal: false,
        };
        self.broadcast(seq, span, EventKind::StreamPayload(Box::new(problem)));
        ErrorInfo {
            name: Some("AI_TypeValidationError".into()),
            message: format!(
                "Type validation failed: Value: {}.\nError message: {first}",
                capped(p.data, 400)
            ),
            retryable: Some(false),
            message_span: first_at.or(Some(data_span.head())),
            payload: Some((capped(p.data, MAX_PAYLOAD_TEXT), data_span)),
            ..ErrorInfo::default()
        }
    }

    /// No data at all, but `event:` lines that name the protocol: a stream cut before its first
    /// data (its terminal event is missing like any other). Sets the decoder they name, and
    /// returns the last of them (its type and span).
    fn decoder_from_event_names(&mut self) -> Option<(String, Span)> {
        let [first, last_named] = &self.named_without_data;
        if self.decoder.is_none()
            && self.events == 0
            && let Some(n) = last_named
            && let Some(proto) = [last_named, first]
                .into_iter()
                .flatten()
                .find_map(|x| detect("", Some(&x.event_type)))
        {
            let span = self.locator.span(n.start, n.end);
            let named = (n.event_type.clone(), span);
            if n.unterminated {
                self.unterminated = Some(span);
            }
            self.decoder = Some(new_decoder(proto));
            return Some(named);
        }
        None
    }

    /// Ends the stream; returns one analysis per profile (the first profile's first). With two
    /// profiles, the first analysis also records what the second did differently.
    pub fn finish(mut self, counts: &[(&'static str, u64)]) -> Vec<Analysis> {
        if self.decoder.is_none() && !self.pending.is_empty() {
            let proto = self.options.hint.unwrap_or(Protocol::OpenAiChat);
            self.decoder = Some(new_decoder(proto));
            let pending = std::mem::take(&mut self.pending);
            for q in &pending {
                self.decode(&q.view());
            }
        }
        let dataless_last = self.decoder_from_event_names();
        let last = self.last.unwrap_or((0, self.locator.span(0, 0)));
        let (seq, span) = last;
        let mut protocol_name = "unknown protocol".to_owned();
        let mut expected = String::new();
        let mut open = Vec::new();
        let not_understood = self.not_understood();
        if let Some(n) = &not_understood {
            // What the decoder made of the stream is not the stream's: the processors start
            // again with nothing, and only the note is left.
            let file = self.locator.file();
            self.processors = (self.options.profiles.iter())
                .map(|p| processor(*p, file, self.options.format, &self.options.session_id))
                .collect();
            self.schema_issues.clear();
            self.terminal = None;
            self.finish_reason = None;
            protocol_name = format!("unknown protocol (not {})", n.protocol);
        } else if let Some(decoder) = self.decoder.as_mut() {
            protocol_name = decoder.protocol().name().to_owned();
            expected = decoder.protocol().terminal_words().to_owned();
            open = decoder.open_at_end();
            if !self.fatal && self.cut.is_none() {
                self.out.clear();
                decoder.flush(&mut self.out);
                let out = std::mem::take(&mut self.out);
                for (part, _) in &out.parts {
                    let info = match part {
                        PartKind::Error(e) => Some(ErrorInfo {
                            name: Some(e.name.clone()),
                            message: e.message.clone(),
                            message_span: Some(span),
                            ..ErrorInfo::default()
                        }),
                        _ => None,
                    };
                    self.apply(seq, span, None, part, info.as_ref());
                }
                let protocol = self.decoder.as_ref().map(|d| d.protocol());
                let finished = !self.step_open && self.last_step_reason.is_some();
                if protocol != Some(Protocol::UiStream) && finished {
                    let reason = self.last_step_reason.clone().unwrap_or_default();
                    self.apply(seq, span, None, &PartKind::Finish { reason }, None);
                }
            }
        }
        let total = self.events;
        let cut = self.cut.is_some();
        let mut analyses: Vec<Analysis> = self
            .processors
            .into_iter()
            .map(|p| p.finish(last, total, cut))
            .collect();
        for a in &mut analyses {
            a.schema_issues = self.schema_issues.clone();
            a.undecodable.extend(self.undecodable.iter().cloned());
            a.counts.insert("events", total);
            a.counts.insert("undecodable events", self.invalid);
            for (k, v) in counts {
                a.counts.insert(k, *v);
            }
            let facts = a.stream.get_or_insert_with(Default::default);
            facts.protocol = protocol_name.clone();
            facts.expected_terminal = expected.clone();
            facts.events = total;
            facts.terminal = self.terminal.clone();
            facts.last_event = self
                .last
                .map(|(_, s)| s)
                .or(dataless_last.as_ref().map(|(_, s)| *s));
            facts.without_data = dataless_last.clone();
            facts.unterminated_last = self.unterminated;
            facts.body_cut = self.cut.clone();
            facts.finish_reason = self.finish_reason.clone();
            facts.open_at_end = open.clone();
            facts.not_understood = not_understood.clone();
        }
        if analyses.len() == 2 {
            let alt = alternative(&analyses[0], &analyses[1]);
            if let Some(f) = analyses[0].stream.as_mut() {
                f.alternative = Some(alt);
            }
        }
        analyses
    }
}

fn new_decoder(p: Protocol) -> Box<dyn Decoder> {
    match p {
        Protocol::OpenAiChat => Box::new(openai_chat::OpenAiChat::new()),
        Protocol::OpenAiResponses => Box::new(openai_responses::OpenAiResponses::new()),
        Protocol::Anthropic => Box::new(anthropic::Anthropic::new()),
        Protocol::UiStream => Box::new(ui_stream::UiStream::new()),
        Protocol::AgUi => Box::new(ag_ui::AgUi::new()),
        Protocol::Gemini => Box::new(gemini::Gemini::new()),
        Protocol::Cohere => Box::new(cohere::Cohere::new()),
        Protocol::Bedrock => Box::new(bedrock::Bedrock::new()),
    }
}

fn capped(s: &str, max: usize) -> String {
    match cap_strings(&Value::String(s.to_owned()), max) {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// What `other` did differently from `main`, event by event.
fn alternative(main: &Analysis, other: &Analysis) -> Alternative {
    let outcome = other
        .stream
        .as_ref()
        .map(|f| f.outcome.clone())
        .unwrap_or_default();
    let profile = other
        .stream
        .as_ref()
        .map(|f| f.profile.clone())
        .unwrap_or_default();
    let mut differences = Vec::new();
    let (main_reactions, other_reactions) = (reactions(main), reactions(other));
    let mut seqs: Vec<Seq> = main
        .events
        .iter()
        .chain(other.events.iter())
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ProcessorSkipped { .. }
                    | EventKind::SessionError(_)
                    | EventKind::ProcessorDropped { .. }
            )
        })
        .map(|e| e.seq)
        .collect();
    seqs.sort_unstable();
    seqs.dedup();
    for seq in seqs {
        let (a, b) = (main_reactions.get(&seq), other_reactions.get(&seq));
        if a != b
            && let Some(b) = b
        {
            differences.push((seq, b.clone()));
        }
    }
    let (mine, theirs) = (tool_states(main), tool_states(other));
    let mine: HashSet<(&str, &str)> = mine
        .iter()
        .map(|(c, _, s)| (c.as_str(), s.as_str()))
        .collect();
    // The last event that wrote each of the other processor's tool parts.
    let mut last_write: HashMap<&str, Seq> = HashMap::new();
    for (_, _, p) in other.parts() {
        if let Some(t) = p.part.tool()
            && let Some(o) = p.last()
        {
            let e = last_write.entry(t.call_id.as_str()).or_insert(o.seq);
            *e = (*e).max(o.seq);
        }
    }
    for (call, tool, state) in &theirs {
        if !mine.contains(&(call.as_str(), state.as_str())) {
            let last = last_write.get(call.as_str()).copied().unwrap_or(0);
            differences.push((last, format!("tool `{tool}` ({call}) ends {state}")));
        }
    }
    differences.sort_by_key(|(s, _)| *s);
    Alternative {
        profile,
        outcome: if matches!(outcome, StreamOutcome::Ended) {
            StreamOutcome::Ended
        } else {
            outcome
        },
        differences,
    }
}

/// What a processor did with each event: the first reaction recorded for it.
fn reactions(a: &Analysis) -> HashMap<Seq, String> {
    let mut by_seq = HashMap::new();
    for e in &a.events {
        let reaction = match &e.kind {
            EventKind::ProcessorSkipped { .. } => "skips the event and reads on".to_owned(),
            EventKind::SessionError(i) => format!("ends the session ({})", i.title()),
            EventKind::Log { error: Some(i), .. } if i.name.as_deref() != Some("ZodError") => {
                format!("re-throws it ({})", i.name.as_deref().unwrap_or("error"))
            }
            EventKind::ProcessorDropped(d) => {
                format!("drops the `{}`: {}", d.what, d.reason)
            }
            _ => continue,
        };
        by_seq.entry(e.seq).or_insert(reaction);
    }
    by_seq
}

/// Each tool call of a processor's model: (call id, tool, the state it ends in).
fn tool_states(a: &Analysis) -> Vec<(String, String, String)> {
    let awaiting: crate::FastSet<&str> = (a.stream.iter())
        .flat_map(|f| f.awaiting_execution.iter().map(String::as_str))
        .collect();
    a.parts()
        .filter_map(|(_, _, p): (_, _, &PartRecord)| {
            let t = p.part.tool()?;
            let awaiting = awaiting.contains(p.part.id.as_str());
            let state = match (t.state.error_text(), awaiting) {
                (Some(e), _) => format!("error \"{e}\""),
                (None, true) => format!("{} (awaiting execution)", t.state.status()),
                (None, false) => t.state.status().to_owned(),
            };
            Some((t.call_id.clone(), t.tool.clone(), state))
        })
        .collect()
}

/// Replays a stream read from `input` (a raw capture file).
pub fn replay_reader<R: Read>(
    mut input: R,
    envelope: Envelope,
    locator: Locator,
    options: StreamOptions,
) -> Result<Vec<Analysis>, IngestError> {
    let mut framing = Framing::new(envelope);
    let mut replay = StreamReplay::new(locator, options);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(IngestError::Io(e)),
        };
        framing.feed(&buf[..n], &mut |p| {
            replay.payload(p);
            Ok(())
        })?;
    }
    framing.finish(&mut |p| {
        replay.payload(p);
        Ok(())
    })?;
    let stats = framing.stats();
    replay.set_named_without_data(
        stats.sse.first_named_without_data.clone(),
        stats.sse.last_named_without_data.clone(),
    );
    Ok(replay.finish(&[
        ("bytes", stats.bytes),
        ("comments", stats.sse.comments),
        ("lines", stats.sse.lines.max(stats.lines)),
    ]))
}

/// Replays a stream held in memory (a body decoded from a recording or a log).
pub fn replay_text(
    text: &str,
    envelope: Envelope,
    locator: Locator,
    options: StreamOptions,
    cut: Option<BodyCut>,
) -> Result<Vec<Analysis>, IngestError> {
    let mut framing = Framing::new(envelope);
    let mut replay = StreamReplay::new(locator, options);
    if let Some(c) = cut {
        replay.set_cut(c);
    }
    framing.feed(text.as_bytes(), &mut |p| {
        replay.payload(p);
        Ok(())
    })?;
    framing.finish(&mut |p| {
        replay.payload(p);
        Ok(())
    })?;
    let stats = framing.stats();
    replay.set_named_without_data(
        stats.sse.first_named_without_data.clone(),
        stats.sse.last_named_without_data.clone(),
    );
    Ok(replay.finish(&[("bytes", stats.bytes), ("comments", stats.sse.comments)]))
}

/// Replays a binary `application/vnd.amazon.eventstream` capture (Bedrock ConverseStream): each
/// frame becomes the event `{"<:event-type>": <payload>}`, as the SDK wraps it (an exception
/// frame is keyed by its `:exception-type`); a frame without a type is skipped, as in the SDK.
pub fn replay_eventstream(bytes: &[u8], locator: Locator, options: StreamOptions) -> Vec<Analysis> {
    use crate::protocols::eventstream::{Damage, Item, read};
    let mut replay = StreamReplay::new(locator, options);
    let mut index = 0;
    for item in read(bytes) {
        match item {
            Item::Frame(f) => {
                let Some(ty) = f.event_type else {
                    continue;
                };
                let key = serde_json::to_string(&ty).unwrap_or_default();
                let body = String::from_utf8_lossy(&bytes[f.payload.0..f.payload.1]);
                let data = format!("{{{key}:{body}}}");
                let prefix = key.len() + 2;
                let segments = [
                    (0, f.start as u64),
                    (prefix, f.payload.0 as u64),
                    (prefix + body.len(), f.payload.1 as u64),
                ];
                replay.payload(&Payload {
                    index,
                    event_type: None,
                    data: &data,
                    start: f.start as u64,
                    end: f.end as u64,
                    line: 1,
                    segments: &segments,
                    unterminated: false,
                });
            }
            Item::Damaged(Damage::MessageCrc {
                start,
                end,
                computed,
                recorded,
            }) => replay.damaged(
                index,
                (start as u64, end as u64),
                format!(
                    "the event-stream frame's CRC does not match (computed {computed:#010x}, recorded {recorded:#010x}): the frame was altered and its event is lost"
                ),
                false,
            ),
            Item::Damaged(Damage::Prelude { start, reason }) => replay.damaged(
                index,
                (start as u64, bytes.len() as u64),
                format!("{reason}: the frames from here on cannot be read"),
                false,
            ),
            Item::Damaged(Damage::Truncated { start, have, need }) => replay.damaged(
                index,
                (start as u64, bytes.len() as u64),
                format!("the input ends inside an event-stream frame ({have} of its {need} bytes)"),
                true,
            ),
        }
        index += 1;
    }
    replay.finish(&[("bytes", bytes.len() as u64)])
}
