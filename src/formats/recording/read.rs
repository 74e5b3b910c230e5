//! HTTP recordings and HAR files: one request/response exchange at a time.
//!
//! * HTTP recordings (OpenCode's test cassettes): `{version, metadata, interactions: [{request:
//!   {method, url, headers, body}, response: {status, headers, body}}]}`, bodies as strings;
//! * HAR 1.2: `log.entries[].request.{method, url, postData.text}` and
//!   `response.{status, content.{mimeType, text, encoding}}` (`encoding: "base64"` for binary
//!   captures).
//!
//! [`read`] walks the document once ([`super::json_stream`]) and hands each exchange over as soon
//! as its object closes, with its bodies still as they are in the file: [`Body::decode`] unescapes
//! them and returns a [`Locator`] so spans in the decoded text still point into the file.

use std::io::BufRead;

use base64::Engine as _;

use crate::core::Format;
use crate::core::IngestError;
use crate::json::stream::{PathSeg, RawString, Visitor, walk};
use crate::json::string as json_string;
use crate::protocols::capture::Locator;
use crate::protocols::relay::Header;
use crate::source::{FileId, Span};

/// A body as stored.
#[derive(Clone, Debug)]
pub struct Body {
    pub raw: RawString,
    pub base64: bool,
}

impl Body {
    /// The literal's span (quotes included).
    pub fn span(&self, file: FileId) -> Span {
        let (s, e) = self.raw.literal();
        Span::new(file, s, e - s)
    }

    /// The decoded text and where its bytes are; `Err` says why it cannot be decoded.
    pub fn decode(&self, file: FileId) -> Result<(String, Locator), String> {
        let (text, anchors) = json_string::decode(&self.raw.raw)
            .map_err(|e| format!("the body string has {} at byte {}", e.reason, e.at))?;
        if self.base64 {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim().as_bytes())
                .map_err(|e| format!("the base64 body does not decode: {e}"))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                format!(
                    "the base64 body is not UTF-8 text (byte {} of the decoded body)",
                    e.utf8_error().valid_up_to()
                )
            })?;
            return Ok((text, Locator::Whole(self.span(file))));
        }
        Ok((
            text,
            Locator::JsonString {
                file,
                anchors,
                base: self.raw.content_start(),
                segments: vec![(0, 0)],
            },
        ))
    }
}

/// One request and its response.
#[derive(Clone, Debug, Default)]
pub struct Exchange {
    /// 0-based position in the file.
    pub index: usize,
    pub method: Option<String>,
    pub url: Option<String>,
    pub request_body: Option<Body>,
    pub status: Option<u16>,
    pub status_span: Option<Span>,
    /// The response's content type (`content-type` header, HAR `mimeType`).
    pub content_type: Option<String>,
    pub response_body: Option<Body>,
    /// Where the request URL is.
    pub url_span: Option<Span>,
    /// The response headers (the first [`MAX_HEADERS`], values cut to [`MAX_HEADER_VALUE`]
    /// bytes), to tell a relay by (see [`crate::protocols::relay`]).
    pub headers: Vec<Header>,
    /// HAR header items whose name or value has not come yet, by index.
    har_headers: Vec<(usize, Header)>,
}

/// The most response headers kept of an exchange.
pub const MAX_HEADERS: usize = 64;
/// The most bytes of a header value kept.
pub const MAX_HEADER_VALUE: usize = 256;

impl Exchange {
    /// Keeps a response header (within [`MAX_HEADERS`]).
    fn header(&mut self, name: &str, value: String, span: Option<Span>) {
        if self.headers.len() < MAX_HEADERS {
            self.headers.push(Header {
                name: name.to_owned(),
                value: crate::text::capped(&value, MAX_HEADER_VALUE),
                span,
            });
        }
    }
}

struct Collector<'a> {
    file: FileId,
    har: bool,
    current: Option<Exchange>,
    each: &'a mut dyn FnMut(Exchange) -> Result<(), IngestError>,
    exchanges: usize,
}

impl Collector<'_> {
    /// The exchange index and the path inside it, if `path` is inside one.
    fn split<'p>(&self, path: &'p [PathSeg]) -> Option<(usize, &'p [PathSeg])> {
        let (root, rest): (&[&str], usize) = if self.har {
            (&["log", "entries"], 2)
        } else {
            (&["interactions"], 1)
        };
        for (seg, want) in path.iter().zip(root) {
            if seg.key() != Some(*want) {
                return None;
            }
        }
        match path.get(rest) {
            Some(PathSeg::Index(i)) => Some((*i, &path[rest + 1..])),
            _ => None,
        }
    }

    fn exchange(&mut self, index: usize) -> &mut Exchange {
        if self.current.as_ref().is_none_or(|e| e.index != index) {
            self.current = Some(Exchange {
                index,
                ..Exchange::default()
            });
        }
        self.current.get_or_insert_with(Exchange::default)
    }
}

fn keys(rel: &[PathSeg]) -> Vec<String> {
    rel.iter()
        .map(|s| match s {
            PathSeg::Key(k) => k.to_ascii_lowercase(),
            PathSeg::Index(i) => i.to_string(),
        })
        .collect()
}

impl Visitor for Collector<'_> {
    fn wants(&mut self, path: &[PathSeg]) -> bool {
        let Some((_, rel)) = self.split(path) else {
            return false;
        };
        let k = keys(rel);
        let k: Vec<&str> = k.iter().map(String::as_str).collect();
        if self.har {
            matches!(
                k.as_slice(),
                ["request", "method" | "url"]
                    | ["request", "postdata", "text"]
                    | ["response", "content", "text" | "mimetype" | "encoding"]
                    | ["response", "headers", _, "name" | "value"]
            )
        } else {
            matches!(
                k.as_slice(),
                ["request", "method" | "url" | "body"]
                    | ["response", "body"]
                    | ["response", "headers", _]
                    | ["response", "headers", _, _]
            )
        }
    }

    fn string(&mut self, path: &[PathSeg], value: RawString) -> Result<(), IngestError> {
        let Some((index, rel)) = self.split(path) else {
            return Ok(());
        };
        let k = keys(rel);
        let k: Vec<&str> = k.iter().map(String::as_str).collect();
        let small = || {
            json_string::decode(&value.raw)
                .map(|(t, _)| t)
                .unwrap_or_default()
        };
        let har = self.har;
        let file = self.file;
        let (s, e) = value.literal();
        let span = Some(Span::new(file, s, e - s));
        let ex = self.exchange(index);
        match (har, k.as_slice()) {
            (_, ["request", "method"]) => ex.method = Some(small()),
            (_, ["request", "url"]) => {
                ex.url = Some(small());
                ex.url_span = span;
            }
            (false, ["request", "body"]) | (true, ["request", "postdata", "text"]) => {
                ex.request_body = Some(Body {
                    raw: value,
                    base64: false,
                });
            }
            (false, ["response", "body"]) | (true, ["response", "content", "text"]) => {
                let base64 = ex.response_body.as_ref().is_some_and(|b| b.base64);
                ex.response_body = Some(Body { raw: value, base64 });
            }
            (false, ["response", "headers", "content-type"])
            | (true, ["response", "content", "mimetype"]) => {
                ex.content_type = Some(small());
                if !har {
                    ex.header("content-type", small(), span);
                }
            }
            // A recording's headers: `{name: value}` or `{name: [values]}`.
            (false, ["response", "headers", name] | ["response", "headers", name, _]) => {
                let name = (*name).to_owned();
                ex.header(&name, small(), span);
            }
            // A HAR's: `[{name, value}]`, the two in either order.
            (true, ["response", "headers", i, field]) => {
                let Ok(i) = i.parse::<usize>() else {
                    return Ok(());
                };
                let text = small();
                let at = match ex.har_headers.iter().position(|(j, _)| *j == i) {
                    Some(at) => at,
                    None if ex.har_headers.len() < MAX_HEADERS => {
                        ex.har_headers.push((
                            i,
                            Header {
                                name: String::new(),
                                value: String::new(),
                                span: None,
                            },
                        ));
                        ex.har_headers.len() - 1
                    }
                    None => return Ok(()),
                };
                let h = &mut ex.har_headers[at].1;
                if *field == "name" {
                    h.name = text;
                } else {
                    h.value = crate::text::capped(&text, MAX_HEADER_VALUE);
                    h.span = span;
                }
            }
            (true, ["response", "content", "encoding"]) => {
                let b64 = small().eq_ignore_ascii_case("base64");
                match ex.response_body.as_mut() {
                    Some(b) => b.base64 = b64,
                    None if b64 => {
                        // `encoding` before `text`: remember it on an empty body.
                        ex.response_body = Some(Body {
                            raw: RawString {
                                raw: Vec::new(),
                                quote: 0,
                            },
                            base64: true,
                        });
                    }
                    None => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn scalar(&mut self, path: &[PathSeg], text: &str, at: (u64, u64)) {
        let Some((index, rel)) = self.split(path) else {
            return;
        };
        if keys(rel) == ["response", "status"] {
            let file = self.file;
            let ex = self.exchange(index);
            ex.status = text.parse().ok();
            ex.status_span = Some(Span::new(file, at.0, at.1 - at.0));
        }
    }

    fn close(&mut self, path: &[PathSeg]) -> Result<(), IngestError> {
        let Some((index, rel)) = self.split(path) else {
            return Ok(());
        };
        if !rel.is_empty() {
            return Ok(());
        }
        let ex = match self.current.take() {
            Some(ex) if ex.index == index => ex,
            other => {
                self.current = other;
                Exchange {
                    index,
                    ..Exchange::default()
                }
            }
        };
        let mut ex = ex;
        for (_, h) in std::mem::take(&mut ex.har_headers) {
            if !h.name.is_empty() {
                ex.headers.push(h);
            }
        }
        self.exchanges += 1;
        (self.each)(ex)
    }
}

/// Reads the exchanges of a recording or HAR file, calling `each` as each one closes. Returns
/// how many there were.
pub fn read<R: BufRead>(
    input: R,
    file: FileId,
    format: Format,
    each: &mut dyn FnMut(Exchange) -> Result<(), IngestError>,
) -> Result<usize, IngestError> {
    let mut c = Collector {
        file,
        har: format == Format::Har,
        current: None,
        each,
        exchanges: 0,
    };
    walk(input, &mut c)?;
    Ok(c.exchanges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchanges(doc: &str, format: Format) -> Vec<Exchange> {
        let mut out = Vec::new();
        let r = read(doc.as_bytes(), FileId(0), format, &mut |e| {
            out.push(e);
            Ok(())
        });
        assert!(r.is_ok(), "{r:?}");
        out
    }

    #[test]
    fn response_headers_are_kept_of_both_shapes() {
        let rec = r#"{"version":1,"interactions":[{"request":{"method":"POST","url":"https://x/v1/responses"},"response":{"status":200,"headers":{"content-type":"text/event-stream","Via":["1.1 a","1.1 b"]},"body":""}}]}"#;
        let ex = exchanges(rec, Format::HttpRecording);
        let h: Vec<(&str, &str)> = ex[0]
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(
            h,
            [
                ("content-type", "text/event-stream"),
                ("via", "1.1 a"),
                ("via", "1.1 b")
            ]
        );
        let har = r#"{"log":{"entries":[{"request":{"method":"POST","url":"https://x/v1"},"response":{"status":200,"headers":[{"value":"v1","name":"X-LiteLLM-Call-Id"},{"name":"server","value":"uvicorn"}],"content":{"text":""}}}]}}"#;
        let ex = exchanges(har, Format::Har);
        let h: Vec<(&str, &str)> = ex[0]
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(h, [("X-LiteLLM-Call-Id", "v1"), ("server", "uvicorn")]);
        assert!(ex[0].headers[0].span.is_some() && ex[0].url_span.is_some());
    }

    #[test]
    fn recording_bodies_map_back_into_the_file() {
        let doc = r#"{"version":1,"metadata":{},"interactions":[{"request":{"method":"POST","url":"https://x/v1/messages","body":"{\"a\":1}"},"response":{"status":200,"headers":{"content-type":"text/event-stream"},"body":"event: ping\ndata: {\"type\": \"ping\"}\n\n"}}]}"#;
        let ex = exchanges(doc, Format::HttpRecording);
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].status, Some(200));
        assert_eq!(ex[0].method.as_deref(), Some("POST"));
        assert_eq!(ex[0].content_type.as_deref(), Some("text/event-stream"));
        let body = ex[0].response_body.as_ref().map(|b| b.decode(FileId(0)));
        let Some(Ok((text, loc))) = body else {
            panic!("no body");
        };
        assert!(text.starts_with("event: ping\ndata: {\"type\""));
        let k = text.find("ping\"}").unwrap_or(0) as u64;
        let span = loc.span(k, k + 4);
        assert_eq!(&doc[span.offset as usize..span.end() as usize], "ping");
    }

    #[test]
    fn har_base64_after_text() {
        let doc = r#"{"log":{"version":"1.2","entries":[{"request":{"method":"POST","url":"u","postData":{"text":"{}"}},"response":{"status":200,"content":{"mimeType":"text/event-stream","text":"ZGF0YTogMQoK","encoding":"base64"}}}]}}"#;
        let ex = exchanges(doc, Format::Har);
        let body = ex[0].response_body.as_ref().map(|b| b.decode(FileId(0)));
        let Some(Ok((text, Locator::Whole(span)))) = body else {
            panic!("no base64 body");
        };
        assert_eq!(text, "data: 1\n\n");
        assert_eq!(
            &doc[span.offset as usize..span.end() as usize],
            "\"ZGF0YTogMQoK\""
        );
    }
}
