//! A recording's exchanges as units of diagnosis.

use crate::core::Format;
use crate::core::IngestError;
use crate::protocols::capture::{self, Envelope};
use crate::protocols::request;
use crate::protocols::stream::StreamOptions;
use crate::protocols::stream::protocol::Protocol;
use crate::request::RecordedResponse;
use crate::session::Analysis;

use super::read::Exchange;

/// The analysis units of one recorded exchange: its request (the model's input) and, when the
/// response is a stream, the stream replayed with each profile.
pub fn exchange_units(
    ex: &Exchange,
    file: crate::source::FileId,
    format: Format,
    options: &StreamOptions,
) -> Result<Vec<Analysis>, IngestError> {
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
            o.hint = ex.url.as_deref().and_then(Protocol::of_url);
            let envelope = capture::sniff_envelope(&text).unwrap_or(Envelope::Sse);
            crate::protocols::stream::replay_text(&text, envelope, locator, o, None)?
        }
        None => vec![Analysis::new(file, format)],
    };
    let relay = crate::protocols::relay::identify(ex.url.as_deref(), ex.url_span, &ex.headers);
    for u in &mut units {
        if let Some(stream) = u.stream.as_mut() {
            stream.relay = relay.clone();
        }
        u.format = format;
        u.requests = requests.clone();
        u.undecodable.extend(undecodable.iter().cloned());
    }
    Ok(units)
}
