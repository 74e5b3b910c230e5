//! Relays between a client and its provider — LLM gateways and HTTP proxies — as a recording
//! shows them: by the host the request went to, or by the headers a relay adds to the response.
//! A relay has its own timeouts and buffers, and a stream it cuts ends like any truncated stream;
//! naming it tells the reader where to look.
//!
//! Only evidence that names a relay counts: a header that only the relay product sets, a `Via`
//! header (set by a proxy that forwards the response, RFC 9110 §7.6.3), or a gateway's own host.
//! A CDN's headers (`cf-ray`, `server: cloudflare`) do not count: the providers' own APIs are
//! served behind CDNs.

use crate::session::Relay;
use crate::source::Span;

/// Response header names (lowercase) or name prefixes that only a relay sets, with its name.
const HEADER_PREFIXES: &[(&str, &str)] = &[
    ("x-litellm-", "a LiteLLM proxy"),
    ("cf-aig-", "Cloudflare AI Gateway"),
    ("helicone-", "Helicone"),
    ("x-portkey-", "Portkey"),
    ("x-kong-", "a Kong gateway"),
    ("x-envoy-", "an Envoy proxy"),
];

/// Request hosts (or host suffixes) of relays.
const HOSTS: &[(&str, &str)] = &[
    ("openrouter.ai", "OpenRouter"),
    ("gateway.ai.cloudflare.com", "Cloudflare AI Gateway"),
    ("helicone.ai", "Helicone"),
    ("portkey.ai", "Portkey"),
];

/// A response header as recorded: its name, value and where the value is.
#[derive(Debug, Clone)]
pub struct Header {
    pub name: String,
    pub value: String,
    pub span: Option<Span>,
}

/// The relay `url` and `headers` show, if any: the request's host first (where the request was
/// sent), then a relay's own response header, then `Via`.
pub fn identify(url: Option<&str>, url_span: Option<Span>, headers: &[Header]) -> Option<Relay> {
    if let Some(host) = url.and_then(host_of) {
        for (suffix, name) in HOSTS {
            if host == *suffix || host.ends_with(&format!(".{suffix}")) {
                return Some(Relay {
                    name: (*name).to_owned(),
                    evidence: format!("the request went to {host}"),
                    span: url_span,
                });
            }
        }
    }
    for h in headers {
        let lower = h.name.to_ascii_lowercase();
        if let Some((_, name)) = HEADER_PREFIXES.iter().find(|(p, _)| lower.starts_with(p)) {
            return Some(Relay {
                name: (*name).to_owned(),
                evidence: format!("the response carries its header `{lower}`"),
                span: h.span,
            });
        }
    }
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("via") && !h.value.trim().is_empty())
        .map(|h| Relay {
            name: "a proxy".to_owned(),
            evidence: format!(
                "the response carries `via: {}`",
                crate::text::clip_to(h.value.trim(), 80)
            ),
            span: h.span,
        })
}

/// The host of an `http(s)://` URL, lowercase, without port or credentials.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, value: &str) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
            span: None,
        }
    }

    #[test]
    fn a_relay_is_named_only_by_its_own_evidence() {
        let r = identify(Some("https://openrouter.ai/api/v1/responses"), None, &[]).unwrap();
        assert_eq!(r.name, "OpenRouter");
        let r = identify(
            Some("https://x.example/v1/responses"),
            None,
            &[
                header("content-type", "text/event-stream"),
                header("X-LiteLLM-Call-Id", "1"),
            ],
        )
        .unwrap();
        assert_eq!(r.name, "a LiteLLM proxy");
        assert!(r.evidence.contains("x-litellm-call-id"));
        let r = identify(None, None, &[header("Via", "1.1 corp-proxy")]).unwrap();
        assert_eq!(r.name, "a proxy");
        // The providers' own hosts and CDN headers name no relay; nor does a local server.
        for url in [
            "https://api.openai.com/v1/responses",
            "https://api.anthropic.com/v1/messages",
            "http://127.0.0.1:4010/v1/responses",
        ] {
            assert_eq!(
                identify(
                    Some(url),
                    None,
                    &[header("cf-ray", "x"), header("server", "cloudflare")]
                ),
                None,
                "{url}"
            );
        }
        assert_eq!(
            host_of("https://u:p@Gateway.AI.cloudflare.com:443/v1/x").as_deref(),
            Some("gateway.ai.cloudflare.com")
        );
    }
}
