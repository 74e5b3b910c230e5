//! The one-way pipeline, end to end: detect → ingest → replay → checks → prepared output.
//!
//! [`diagnose_file`] streams: each unit (a log, a capture, one recorded exchange, one session of
//! a database) is checked and prepared for printing as soon as it is replayed, and handed over at
//! once, so nothing accumulates across units. Every file gets its own [`SourceMap`], so files can
//! be diagnosed on several threads.

use std::collections::HashSet;
use std::path::Path;

use crate::checks;
use crate::config::FilePolicy;
use crate::diagnostic::Finding;
use crate::error::RewindError;
use crate::ingest::capture::{self, Envelope, Locator};
use crate::ingest::recording::{self, Exchange};
use crate::ingest::{self, Format};
use crate::reconstruct::{RecordedResponse, request};
use crate::replay;
use crate::replay::stream::protocol::Protocol;
use crate::replay::stream::{Profile, StreamOptions};
use crate::report::human::Renderer;
use crate::report::{self, UnitOutput};
use crate::session::Analysis;
use crate::source::SourceMap;

/// How inputs are read and replayed.
#[derive(Clone, Debug)]
pub struct Options {
    /// Read every input as this kind instead of recognising it (`--input`).
    pub input: Option<Format>,
    /// Processor profiles for stream captures: the first is diagnosed; a second one is replayed
    /// alongside and what it did differently is reported.
    pub profiles: Vec<Profile>,
    /// Force the stream protocol instead of recognising it.
    pub protocol: Option<Protocol>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            input: None,
            profiles: vec![Profile::OpencodeFixed, Profile::Opencode],
            protocol: None,
        }
    }
}

/// Replays `path` into analysis units, calling `each` for every one.
pub fn analyze(
    path: &Path,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&SourceMap, Analysis) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    analyze_with(
        path,
        &Options::default(),
        sources,
        &mut |sources, mut units| match units.is_empty() {
            true => Ok(()),
            false => each(sources, units.swap_remove(0)),
        },
    )
}

/// Receives each unit: one analysis per processor profile.
pub type UnitSink<'a> = dyn FnMut(&SourceMap, Vec<Analysis>) -> Result<(), RewindError> + 'a;

/// Replays `path` into analysis units; `each` gets, for every unit, one analysis per processor
/// profile of `options` (one only for inputs that are not streams).
pub fn analyze_with(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let format = match options.input {
        Some(f) => {
            if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(ingest::DetectError::Directory {
                    path: path.to_path_buf(),
                }
                .into());
            }
            f
        }
        None => ingest::detect(path)?,
    };
    let ingest_err = |source| RewindError::Ingest {
        path: path.to_path_buf(),
        source,
    };
    let stream_options = |format: Format| {
        let mut o = StreamOptions::new(format, options.profiles.clone());
        o.protocol = options.protocol;
        o
    };
    match format {
        Format::AgentLog => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let mut analysis = replay::agent_log::replay(reader, file).map_err(ingest_err)?;
            let embedded = std::mem::take(&mut analysis.embedded_streams);
            each(sources, vec![analysis])?;
            for (n, body) in embedded.into_iter().enumerate() {
                let mut o = stream_options(format);
                o.session_id = format!("http-stream-{}", n + 1);
                o.hint = body.url.as_deref().and_then(protocol_of_url);
                let units = replay::stream::replay_text(
                    &body.text,
                    Envelope::Sse,
                    body.locator,
                    o,
                    body.cut,
                )
                .map_err(ingest_err)?;
                each(sources, units)?;
            }
            Ok(())
        }
        Format::Sse | Format::JsonLines => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let envelope = if format == Format::Sse {
                Envelope::Sse
            } else {
                Envelope::JsonLines
            };
            let units = replay::stream::replay_reader(
                reader,
                envelope,
                Locator::File(file),
                stream_options(format),
            )
            .map_err(ingest_err)?;
            each(sources, units)
        }
        Format::HttpRecording | Format::Har => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let sources: &SourceMap = sources;
            let mut failure: Option<RewindError> = None;
            let opts = stream_options(format);
            recording::read(reader, file, format, &mut |ex| {
                if failure.is_some() {
                    return Ok(());
                }
                let units = exchange_units(&ex, file, format, &opts)?;
                if let Err(e) = each(sources, units) {
                    failure = Some(e);
                }
                Ok(())
            })
            .map_err(ingest_err)?;
            match failure {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
        other => Err(RewindError::Unsupported {
            path: path.to_path_buf(),
            format: other,
            hint: String::new(),
        }),
    }
}

/// The analysis units of one recorded exchange: its request (the model's input) and, when the
/// response is a stream, the stream replayed with each profile.
fn exchange_units(
    ex: &Exchange,
    file: crate::source::FileId,
    format: Format,
    options: &StreamOptions,
) -> Result<Vec<Analysis>, ingest::IngestError> {
    let n = ex.index + 1;
    let what = if format == Format::Har {
        "entry"
    } else {
        "interaction"
    };
    let session = format!("{what}-{n}");
    let response_text = ex.response_body.as_ref().map(|b| (b, b.decode(file)));
    let mut response = None;
    let mut stream_body = None;
    let mut undecodable = Vec::new();
    if let Some((body, decoded)) = response_text {
        match decoded {
            Err(reason) => undecodable.push(crate::session::Undecodable {
                span: body.span(file),
                reason: format!("the response body of {what} {n} cannot be read: {reason}"),
                at: None,
                truncated: false,
            }),
            Ok((text, locator)) => {
                let is_stream = ex
                    .content_type
                    .as_deref()
                    .is_some_and(|c| c.contains("event-stream") || c.contains("ndjson"))
                    || capture::sniff_envelope(&text).is_some();
                let status = ex.status.unwrap_or(200);
                if is_stream && status < 400 {
                    stream_body = Some((text, locator));
                } else {
                    response = Some(RecordedResponse {
                        status,
                        error: request::error_message(&text),
                        span: ex.status_span.or(Some(body.span(file))),
                    });
                }
            }
        }
    }
    if response.is_none()
        && let Some(status) = ex.status
    {
        response = Some(RecordedResponse {
            status,
            error: None,
            span: ex.status_span,
        });
    }
    let mut requests = Vec::new();
    if let Some(body) = &ex.request_body {
        match body.decode(file) {
            Ok((text, locator)) => {
                if let Some(mut req) = request::from_body(
                    &text,
                    &locator,
                    ex.url.as_deref(),
                    format!("the request of {what} {n}"),
                    response.clone(),
                ) {
                    req.session_id = Some(session.clone());
                    requests.push(req);
                }
            }
            Err(reason) => undecodable.push(crate::session::Undecodable {
                span: body.span(file),
                reason: format!("the request body of {what} {n} cannot be read: {reason}"),
                at: None,
                truncated: false,
            }),
        }
    }
    let mut units = match stream_body {
        Some((text, locator)) => {
            let mut o = options.clone();
            o.session_id = session;
            o.hint = ex.url.as_deref().and_then(protocol_of_url);
            let envelope = capture::sniff_envelope(&text).unwrap_or(Envelope::Sse);
            replay::stream::replay_text(&text, envelope, locator, o, None)?
        }
        None => vec![Analysis::new(file, format)],
    };
    for u in &mut units {
        u.format = format;
        u.requests = requests.clone();
        u.undecodable.extend(undecodable.iter().cloned());
    }
    Ok(units)
}

/// The stream protocol a request URL implies.
fn protocol_of_url(url: &str) -> Option<Protocol> {
    if url.contains("/chat/completions") {
        Some(Protocol::OpenAiChat)
    } else if url.contains("/responses") {
        Some(Protocol::OpenAiResponses)
    } else if url.trim_end_matches('/').ends_with("/messages") {
        Some(Protocol::Anthropic)
    } else {
        None
    }
}

/// The profile compared with `primary` by default: the classic processor for the fixed one and
/// the other way round; TanStack before and after #727.
pub fn counterpart(primary: Profile) -> Profile {
    match primary {
        Profile::OpencodeFixed => Profile::Opencode,
        Profile::Opencode | Profile::Agent08 => Profile::OpencodeFixed,
        Profile::Tanstack => Profile::TanstackPre727,
        Profile::TanstackPre727 => Profile::Tanstack,
    }
}

/// Runs the checks `policy` enables on one unit, with its severity overrides applied.
pub fn check(analysis: &Analysis, policy: &FilePolicy) -> Vec<Finding> {
    let mut findings = checks::run(analysis, &|m| policy.selection.enabled(m));
    policy.apply(&mut findings);
    findings
}

/// Diagnoses one file (with the first processor profile for streams) and hands each prepared
/// unit to `each`.
pub fn diagnose_file(
    path: &Path,
    options: &Options,
    policy: &FilePolicy,
    baseline: Option<&HashSet<String>>,
    renderer: Option<&Renderer>,
    each: &mut dyn FnMut(UnitOutput) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let mut sources = SourceMap::new();
    analyze_with(path, options, &mut sources, &mut |sources, mut units| {
        if units.is_empty() {
            return Ok(());
        }
        let analysis = units.swap_remove(0);
        let findings = check(&analysis, policy);
        each(report::prepare(
            sources, &analysis, &findings, baseline, renderer,
        ))
    })
}
