//! Logger entries: errors, retries, model and usage, the wrapper's status.

use serde_json::Value;

use super::MAX_ERROR_MESSAGE;
use super::events::{Usage, error_info, finish_of, model_flag, num_of, parse_if_string, usage_of};
use super::state::State;
use crate::formats::agent_log::read::JsonRecord;
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, cap_strings};
use crate::session::{ErrorInfo, EventKind, LogLevel, Seq};
use crate::source::Span;
use crate::text::capped;

impl State {
    pub(super) fn apply_log(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        base: &[&str],
        service: &str,
        message: &str,
    ) {
        let at = |key: &str| {
            let mut path: Vec<Seg<'_>> = base.iter().map(|k| Seg::Key(k)).collect();
            path.push(Seg::Key(key));
            rec.locate(&path)
        };
        // After a retry sleep was announced, how long the log goes on.
        if !self.waits.is_empty()
            && let Some(t) = obj.get("timestamp").and_then(timestamp_ms)
        {
            self.last_log_ms = Some(self.last_log_ms.map_or(t, |l| l.max(t)));
        }
        if service == "http" {
            self.embedded_stream(rec);
            self.response_usage(seq, rec, obj, &at);
        }
        self.logged_usage(seq, rec, obj, &at);
        if message == "exiting loop" && service.starts_with("session") {
            self.event(seq, rec.span, None, EventKind::LoopExit);
        }
        self.logged_models(seq, rec, obj, base, service, message, &at);
        self.logged_retry(seq, rec, obj, message, &at);
        let level = match obj.get("level").and_then(Value::as_str) {
            Some("error") => LogLevel::Error,
            Some("warn") => LogLevel::Warn,
            Some("info") => LogLevel::Info,
            _ => LogLevel::Debug,
        };
        if service == "session.prompt" && message == "cancel" {
            let session = obj
                .get("sessionID")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.event(seq, rec.span, session, EventKind::Cancel);
            return;
        }
        if level < LogLevel::Warn {
            return;
        }
        let mut path: Vec<&str> = base.to_vec();
        path.push("error");
        let error = match obj.get("error") {
            Some(e) if e.is_object() => Some(error_info(rec, &path, e)),
            // An error logged without an error object: its class as a string, or nothing but
            // the message (`Provider returned zero tokens…`).
            Some(Value::String(_)) | None if level == LogLevel::Error => {
                let class = obj
                    .get("error")
                    .and_then(Value::as_str)
                    .filter(|c| c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
                    .map(str::to_owned);
                let text = obj
                    .get("error")
                    .and_then(Value::as_str)
                    .filter(|_| class.is_none())
                    .unwrap_or(message);
                Some(ErrorInfo {
                    name: class,
                    message: capped(text, MAX_ERROR_MESSAGE),
                    message_span: at("message").or_else(|| at("error")),
                    data: cap_strings(&Value::Object(obj.clone()), MAX_KEPT_STRING),
                    ..ErrorInfo::default()
                })
            }
            _ => None,
        };
        let kind = EventKind::Log {
            level,
            service: service.to_owned(),
            message: message.to_owned(),
            error: error.map(Box::new),
        };
        self.event(seq, rec.span, None, kind);
    }

    /// A retry a logger entry speaks of: the provider's `retry-after`, in ms, remembered for the
    /// sleep it leads to, and the sleep the agent announces.
    fn logged_retry(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        message: &str,
        at: &dyn Fn(&str) -> Option<Span>,
    ) {
        let num = |k: &str| obj.get(k).and_then(num_of);
        let lower = message.to_ascii_lowercase();
        if lower.contains("retry-after")
            && let Some(ms) = num("retryAfterMs").or_else(|| num("delayMs"))
        {
            let key = if obj.contains_key("retryAfterMs") {
                "retryAfterMs"
            } else {
                "delayMs"
            };
            if let Some(span) = at(key) {
                self.retry_after = Some((ms, span));
            }
        }
        if (lower.contains("will retry") || lower.contains("retrying") || lower.contains("sleep"))
            && let Some((key, ms)) = ["delay", "delayMs", "waitMs", "sleepMs"]
                .iter()
                .find_map(|k| num(k).map(|v| (*k, v)))
        {
            let kind = EventKind::RetryWait(Box::new(crate::session::RetryWait {
                delay_ms: ms,
                delay_span: at(key),
                retry_after: self.retry_after.take(),
                after: crate::session::WaitAfter::default(),
            }));
            let at_ms = obj.get("timestamp").and_then(timestamp_ms);
            self.waits.push((seq, at_ms, false));
            self.event(seq, rec.span, None, kind);
        }
    }

    /// The usage a logger entry carries: the provider's metadata, or the usage the SDK handed
    /// the agent (`rawUsage`, logged by `getUsage` and by the zero-token warning); of those a
    /// record holds, the one with the most tokens, with the cache reads and reasoning any of
    /// them states.
    fn logged_usage(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        at: &dyn Fn(&str) -> Option<Span>,
    ) {
        let usages = ["rawUsage", "providerMetadata", "rawMetadata"]
            .into_iter()
            .filter_map(|key| Some((key, usage_of(&parse_if_string(obj.get(key)?))?)));
        let mut best: Option<(&str, Usage)> = None;
        for (key, u) in usages {
            best = Some(match best {
                Some((k, b)) if b.input + b.output >= u.input + u.output => (k, merge(b, u)),
                Some((_, b)) => (key, merge(u, b)),
                None => (key, u),
            });
        }
        if let Some((key, u)) = best {
            let kind = EventKind::ProviderUsage(Box::new(provider_usage(u, None, key, at(key))));
            self.event(seq, rec.span, None, kind);
        }
    }

    /// The models a logger entry speaks of: the one the agent's command line asks for, the one
    /// it resolved, and the default it fell back to.
    #[allow(clippy::too_many_arguments)]
    fn logged_models(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        base: &[&str],
        service: &str,
        message: &str,
        at: &dyn Fn(&str) -> Option<Span>,
    ) {
        if message.starts_with("Agent started")
            && let Some(spec) = obj
                .get("command")
                .and_then(Value::as_str)
                .and_then(model_flag)
        {
            let mut path: Vec<Seg<'_>> = base.iter().map(|k| Seg::Key(k)).collect();
            path.push(Seg::Key("command"));
            let span = rec
                .locate_in_string(&path, &spec)
                .or_else(|| at("command"))
                .unwrap_or(rec.span);
            let kind = EventKind::ModelRequested {
                spec,
                by_wrapper: false,
            };
            self.event(seq, span, None, kind);
        }
        // The prompt loop's fallback when the model asked for is not in the catalogue: the
        // default the provider service picks next (`using opencode provider as default`, which
        // it also logs when it picks a default for other uses) is the model that runs.
        if message == "Failed to initialize specified model, falling back to default model"
            && let (Some(provider), Some(model)) = (
                obj.get("providerID").and_then(Value::as_str),
                obj.get("modelID").and_then(Value::as_str),
            )
        {
            self.falling_back = Some((format!("{provider}/{model}"), at("modelID")));
        }
        if message == "using opencode provider as default"
            && let (Some(provider), Some(model)) = (
                obj.get("provider").and_then(Value::as_str),
                obj.get("model").and_then(Value::as_str),
            )
            && let Some(from) = self.falling_back.take()
        {
            let kind = EventKind::ModelResolved(Box::new(crate::session::ResolvedModel {
                raw: format!("{provider}/{model}"),
                provider: provider.to_owned(),
                model: model.to_owned(),
                span: at("model"),
                fallback_from: Some(from),
            }));
            self.event(seq, rec.span, None, kind);
        }
        // The CLI's own model resolution (`using explicit provider/model`, with `rawModel` in
        // later versions); the provider service's `getModel` also loads auxiliary small models.
        if let (Some(provider), Some(model)) = (
            obj.get("providerID").and_then(Value::as_str),
            obj.get("modelID").and_then(Value::as_str),
        ) && (obj.contains_key("rawModel") || service == "default")
        {
            let raw = obj
                .get("rawModel")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{provider}/{model}"), str::to_owned);
            let kind = EventKind::ModelResolved(Box::new(crate::session::ResolvedModel {
                raw,
                provider: provider.to_owned(),
                model: model.to_owned(),
                span: at("rawModel").or_else(|| at("modelID")),
                fallback_from: None,
            }));
            self.event(seq, rec.span, None, kind);
        }
    }

    /// Usage in a logged response body: a JSON body's `usage`, or the last `usage` of an SSE body.
    fn response_usage(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        at: &dyn Fn(&str) -> Option<Span>,
    ) {
        let Some(body) = obj.get("bodyPreview").and_then(Value::as_str) else {
            return;
        };
        // The agent's own server (`POST /session/…/message`) answers with its stored message,
        // not with what a provider sent.
        let url = obj.get("url").and_then(Value::as_str).unwrap_or_default();
        if ["127.0.0.1", "localhost", "/session/"]
            .iter()
            .any(|m| url.contains(m))
        {
            return;
        }
        let mut found = None;
        let mut finish = None;
        if body.trim_start().starts_with('{') {
            if let Ok(v) = serde_json::from_str::<Value>(body) {
                found = usage_of(&v);
                finish = finish_of(&v, 0);
            }
        } else {
            for line in body.lines() {
                let Some(data) = line.strip_prefix("data:") else {
                    continue;
                };
                if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                    if let Some(u) = usage_of(&v) {
                        found = Some(u);
                    }
                    if let Some(f) = finish_of(&v, 0) {
                        finish = Some(f);
                    }
                }
            }
        }
        if found.is_some() || finish.is_some() {
            let span = at("bodyPreview").map(|s| s.head());
            let usage = found.unwrap_or_default();
            let usage = provider_usage(usage, finish, "the logged response body", span);
            self.event(
                seq,
                rec.span,
                None,
                EventKind::ProviderUsage(Box::new(usage)),
            );
        }
    }
}

/// `a`, with the cache reads and reasoning tokens `b` states where `a` states none.
fn merge(a: Usage, b: Usage) -> Usage {
    Usage {
        cache_read: if a.cache_read > 0 {
            a.cache_read
        } else {
            b.cache_read
        },
        reasoning: if a.reasoning > 0 {
            a.reasoning
        } else {
            b.reasoning
        },
        nested: a.nested || b.nested,
        ..a
    }
}

/// The session model's record of usage a provider sent.
fn provider_usage(
    u: Usage,
    finish: Option<String>,
    source: &str,
    span: Option<Span>,
) -> crate::session::ProviderUsage {
    crate::session::ProviderUsage {
        input: u.input,
        output: u.output,
        cache_read: u.cache_read,
        reasoning: u.reasoning,
        nested: u.nested,
        finish,
        source: source.into(),
        span,
    }
}

/// A logger entry's `timestamp` in ms since the epoch: an RFC 3339 string or a number of ms.
fn timestamp_ms(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .and_then(|t| u64::try_from(t.timestamp_millis()).ok()),
        _ => None,
    }
}
