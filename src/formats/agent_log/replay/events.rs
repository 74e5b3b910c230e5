//! Reading what an incident leaves: errors, usage, finish reasons, the model flag.

use serde_json::Value;

use super::MAX_ERROR_MESSAGE;
use super::peek::Lenient;
use crate::formats::agent_log::read::JsonRecord;
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, cap_strings, cap_strings_in_place};
use crate::session::ErrorInfo;
use crate::source::Span;
use crate::text::capped;

/// What a log's part keeps in memory: what the checks read (ids, type, tool, call id, status,
/// error, title, whether the input was empty), without tool inputs and outputs, metadata or file
/// contents — so the model grows with the number of parts, not with what the tools printed. (The
/// schema was checked on the full payload before this.)
pub(super) fn slim(mut v: Value) -> Value {
    if let Some(state) = v.get_mut("state").and_then(Value::as_object_mut) {
        for heavy in ["output", "metadata", "attachments", "raw"] {
            state.remove(heavy);
        }
        // A non-empty input becomes `true`: `input_is_empty()` still answers right.
        if let Some(input) = state.get_mut("input")
            && input.as_object().is_some_and(|m| !m.is_empty())
        {
            *input = Value::Bool(true);
        }
    }
    if let Some(obj) = v.as_object_mut() {
        obj.remove("metadata");
    }
    cap_strings_in_place(&mut v, MAX_KEPT_STRING);
    v
}

/// Whether [`slim`] leaves `v` as it is: no `state` object, no `metadata`, no string longer
/// than it keeps (a `step_finish`'s part, as a rule).
pub(super) fn slim_keeps(v: &Value) -> bool {
    fn short(v: &Value) -> bool {
        match v {
            Value::String(s) => s.len() <= MAX_KEPT_STRING,
            Value::Array(items) => items.iter().all(short),
            Value::Object(map) => map.values().all(short),
            _ => true,
        }
    }
    !v.get("state").is_some_and(Value::is_object) && v.get("metadata").is_none() && short(v)
}

/// Reads an error value: a string, a NamedError `{name, data}`, a serialised `Error`
/// `{name, message, …}`, or a wrapper `{error: {…}}`. `path` is where `v` is in the record.
pub(super) fn error_info(rec: &JsonRecord, path: &[&str], v: &Value) -> ErrorInfo {
    let at = |extra: &[&str]| {
        let segs: Vec<Seg<'_>> = path
            .iter()
            .chain(extra.iter())
            .map(|k| Seg::Key(k))
            .collect();
        rec.locate(&segs)
    };
    let mut info = ErrorInfo {
        data: cap_strings(v, MAX_KEPT_STRING),
        ..ErrorInfo::default()
    };
    match v {
        Value::String(s) => {
            info.message = capped(s, MAX_ERROR_MESSAGE);
            info.message_span = at(&[]);
        }
        Value::Object(obj) => {
            // `{error: {name, …}}` (the prompt loop's "stream error" entry): look inside.
            if !obj.contains_key("name")
                && let Some(inner) = obj.get("error").filter(|e| e.is_object())
            {
                let mut deeper = path.to_vec();
                deeper.push("error");
                return error_info(rec, &deeper, inner);
            }
            let s = |k: &str| obj.get(k).and_then(Value::as_str);
            info.name = s("name").map(str::to_owned);
            let data = obj.get("data");
            let (message, where_) =
                if let Some(m) = data.and_then(|d| d.get("message")).and_then(Value::as_str) {
                    (Some(m.to_owned()), at(&["data", "message"]))
                } else if let Some(m) = s("message") {
                    (Some(m.to_owned()), at(&["message"]))
                } else if let Some(text) = s("text") {
                    let short = crate::session::first_line(text, 80);
                    (Some(format!("could not parse {short}")), at(&["name"]))
                } else {
                    (describe_nested(obj), at(&["name"]))
                };
            info.message = capped(&message.unwrap_or_default(), MAX_ERROR_MESSAGE);
            info.message_span = where_;
            info.retryable = data
                .and_then(|d| d.get("isRetryable"))
                .or_else(|| obj.get("isRetryable"))
                .and_then(Value::as_bool);
            info.wrapped = obj
                .get("lastError")
                .or_else(|| obj.get("cause"))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(text) = s("text") {
                let span = at(&["text"]);
                if let Some(span) = span {
                    info.payload = Some((capped(text, MAX_ERROR_MESSAGE), span));
                }
                let mut segs: Vec<Seg<'_>> = path.iter().map(|k| Seg::Key(k)).collect();
                segs.push(Seg::Key("text"));
                info.embedded_event = ["data:", "event:"]
                    .iter()
                    .filter(|m| text.find(**m).is_some_and(|k| k > 0))
                    .find_map(|m| rec.locate_in_string(&segs, m));
            }
        }
        other => info.message = other.to_string(),
    }
    info
}

/// Whether a process-level error object is only a stderr line a wrapper wrapped as an error
/// (`{"type":"error","errorType":"RuntimeError","message":"Verbose mode enabled…"}`): no stack,
/// no data, a generic class, and a message that does not speak of a failure.
pub(super) fn informational(obj: &serde_json::Map<String, Value>) -> bool {
    const FAILURE: &[&str] = &[
        "error",
        "fail",
        "exception",
        "cannot",
        "can't",
        "unable",
        "denied",
        "timed out",
        "timeout",
        "crash",
        "abort",
        "panic",
        "fatal",
        "reject",
        "invalid",
        "not found",
        "refused",
        "unhandled",
        "uncaught",
        "killed",
        "exit code",
        "missing",
        "unexpected",
    ];
    // The class a stderr line gets when it is wrapped; a real crash names its own class and
    // carries its stack.
    let generic = obj.get("errorType").and_then(Value::as_str) == Some("RuntimeError");
    let message = obj
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    generic
        && !obj.contains_key("stack")
        && !obj.contains_key("data")
        && !message.trim().is_empty()
        && !FAILURE.iter().any(|w| message.contains(w))
}

/// Claude Code's synthetic assistant text for a failed request: `API Error: 400 {…json…}`.
pub(crate) fn api_error(text: &str, span: Option<Span>) -> Option<ErrorInfo> {
    let rest = text
        .strip_prefix("API Error")?
        .trim_start_matches(':')
        .trim_start();
    let (code, body) = rest.split_once(' ').unwrap_or((rest, ""));
    let status: Option<u64> = code.parse().ok();
    let body_json: Option<Value> = serde_json::from_str(body.trim()).ok();
    let detail = body_json
        .as_ref()
        .and_then(|b| b.pointer("/error/message"))
        .and_then(Value::as_str);
    let kind = body_json
        .as_ref()
        .and_then(|b| b.pointer("/error/type"))
        .and_then(Value::as_str);
    let message = match (status, kind, detail) {
        (Some(c), Some(k), Some(d)) => format!("{c} {k}: {d}"),
        (Some(c), _, Some(d)) => format!("{c}: {d}"),
        _ => rest.to_owned(),
    };
    Some(ErrorInfo {
        name: Some("API Error".into()),
        message: capped(&message, MAX_ERROR_MESSAGE),
        retryable: status.map(|c| c == 429 || c >= 500),
        data: serde_json::json!({ "statusCode": status, "text": capped(text, MAX_KEPT_STRING) }),
        message_span: span,
        ..ErrorInfo::default()
    })
}

/// A non-negative integer, or a number in a string (`"772.12"` is not read: only integers).
pub(super) fn num_of(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
}

/// A JSON value logged as a string (`"providerMetadata": "{\"anthropic\":…}"`), parsed.
pub(super) fn parse_if_string(v: &Value) -> Value {
    match v {
        Value::String(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

/// The sum of the counts of a token object (`{input, output, reasoning, cache: {read, write}}`).
pub(super) fn usage_total(v: &Value) -> u64 {
    match v {
        Value::Object(m) => m.values().map(usage_total).fold(0, u64::saturating_add),
        other => num_of(other).unwrap_or(0),
    }
}

/// [`usage_total`] of the JSON text of a token object, read without building its value:
/// `None` when the text is not one JSON value, or when an object in it repeats a key (its value
/// would keep only the last).
pub(super) fn usage_total_of(text: &str) -> Option<u64> {
    // What a provider's counts nearly always are: read at once, else through serde.
    match plain_usage(text.as_bytes(), 0, 0) {
        Some((total, repeated, end)) if end == text.len() => (!repeated).then_some(total),
        _ => usage_total_serde(text),
    }
}

/// A token object in its commonest form, read byte by byte: compact, of keys without escapes
/// (at most sixteen to an object) and values that are unsigned integers of at most 15 digits or
/// such objects. Gives the sum of the counts, whether an object repeats a key, and the index
/// after the object starting at `i`; `None` for any other text (read by
/// [`usage_total_serde`]).
fn plain_usage(b: &[u8], mut i: usize, depth: usize) -> Option<(u64, bool, usize)> {
    if depth > 8 || b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    if b.get(i) == Some(&b'}') {
        return Some((0, false, i + 1));
    }
    let mut keys: [&[u8]; 16] = [&[]; 16];
    let (mut n, mut total, mut repeated) = (0, 0u64, false);
    loop {
        if b.get(i) != Some(&b'"') || n == keys.len() {
            return None;
        }
        // An escaped key is left to serde, which decodes it before comparing.
        let (end, escaped) = crate::model::conform::string_end(b, i + 1)?;
        if escaped || b.get(end + 1) != Some(&b':') {
            return None;
        }
        let key = b.get(i + 1..end)?;
        repeated |= keys[..n].contains(&key);
        keys[n] = key;
        n += 1;
        i = end + 2;
        match *b.get(i)? {
            b'{' => {
                let (inner, again, after) = plain_usage(b, i, depth + 1)?;
                total = total.saturating_add(inner);
                repeated |= again;
                i = after;
            }
            b'0'..=b'9' => {
                let digits = b
                    .get(i..)?
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits > 15 || (digits > 1 && b.get(i) == Some(&b'0')) {
                    return None;
                }
                let count: u64 = std::str::from_utf8(b.get(i..i + digits)?)
                    .ok()?
                    .parse()
                    .ok()?;
                total = total.saturating_add(count);
                i += digits;
            }
            _ => return None,
        }
        match *b.get(i)? {
            b',' => i += 1,
            b'}' => return Some((total, repeated, i + 1)),
            _ => return None,
        }
    }
}

/// [`usage_total_of`] through serde, for any JSON text.
fn usage_total_serde(text: &str) -> Option<u64> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct Total;
    impl<'de> DeserializeSeed<'de> for Total {
        type Value = Option<u64>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
            d.deserialize_any(self)
        }
    }
    // Each leaf is made into the `Value` the parse would make of it, and counted by `num_of`.
    impl<'de> Visitor<'de> for Total {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Option<u64>, E> {
            Ok(Some(0))
        }
        fn visit_unit<E>(self) -> Result<Option<u64>, E> {
            Ok(Some(0))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Option<u64>, E> {
            Ok(Some(num_of(&Value::from(v)).unwrap_or(0)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Option<u64>, E> {
            Ok(Some(num_of(&Value::from(v)).unwrap_or(0)))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Option<u64>, E> {
            Ok(Some(num_of(&Value::from(v)).unwrap_or(0)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Option<u64>, E> {
            Ok(Some(v.parse().unwrap_or(0)))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Some(0))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u64>, A::Error> {
            // A set, not a list: an object of many keys is read in linear time.
            let mut keys = crate::FastSet::default();
            let mut total = Some(0u64);
            while let Some(Lenient(key)) = map.next_key::<Lenient<'de>>()? {
                if !keys.insert(key) {
                    total = None;
                }
                let v = map.next_value_seed(Total)?;
                total = total.zip(v).map(|(a, b)| a.saturating_add(b));
            }
            Ok(total)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let total = Total.deserialize(&mut de).ok()?;
    de.end().ok()?;
    total
}

/// Usage as a provider's value states it: see [`usage_of`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    /// Input tokens read from the cache, output tokens spent reasoning (0 when not stated).
    pub cache_read: u64,
    pub reasoning: u64,
    /// Those two were nested inside the input and output counts (`inputTokens: {total, noCache,
    /// cacheRead}`, `outputTokens: {total, text, reasoning}`).
    pub nested: bool,
}

/// Token counts found anywhere in a provider's value, in the names providers use (Anthropic
/// `input_tokens`, OpenAI `prompt_tokens`, Google `promptTokenCount`, the AI SDK `inputTokens`,
/// a number or, in the usage of the AI SDK's v5/v6 providers, an object with its `total`), with
/// the cache reads and reasoning tokens of the same object, flat or nested; `None` when it
/// carries no input or output count but zeros.
pub fn usage_of(v: &Value) -> Option<Usage> {
    fn walk(v: &Value, best: &mut Usage, depth: usize) {
        if depth > 8 {
            return;
        }
        match v {
            Value::Object(m) => {
                let here = usage_here(m);
                if here.input + here.output > best.input + best.output {
                    *best = here;
                }
                for child in m.values() {
                    walk(child, best, depth + 1);
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, best, depth + 1)),
            _ => {}
        }
    }
    let mut best = Usage::default();
    walk(v, &mut best, 0);
    (best.input + best.output > 0).then_some(best)
}

/// The counts one object of a usage value holds.
fn usage_here(m: &serde_json::Map<String, Value>) -> Usage {
    const INPUT: &[&str] = &[
        "input_tokens",
        "prompt_tokens",
        "inputTokens",
        "promptTokens",
        "promptTokenCount",
    ];
    const OUTPUT: &[&str] = &[
        "output_tokens",
        "completion_tokens",
        "outputTokens",
        "completionTokens",
        "candidatesTokenCount",
    ];
    const CACHE_READ: &[&str] = &[
        "cachedInputTokens",
        "cache_read_input_tokens",
        "cacheReadInputTokens",
        "cachedContentTokenCount",
    ];
    const REASONING: &[&str] = &["reasoningTokens", "thoughtsTokenCount"];
    // Detail objects beside the counts: (the object, the count in it).
    const CACHE_DETAIL: &[(&str, &str)] = &[
        ("inputTokenDetails", "cacheReadTokens"),
        ("prompt_tokens_details", "cached_tokens"),
        ("input_tokens_details", "cached_tokens"),
        ("promptTokensDetails", "cachedTokens"),
    ];
    const REASONING_DETAIL: &[(&str, &str)] = &[
        ("outputTokenDetails", "reasoningTokens"),
        ("completion_tokens_details", "reasoning_tokens"),
        ("output_tokens_details", "reasoning_tokens"),
        ("completionTokensDetails", "reasoningTokens"),
    ];
    // A count, or an object of counts with its total.
    let count = |v: &Value| num_of(v).or_else(|| v.get("total").and_then(num_of));
    let pick = |keys: &[&str]| keys.iter().find_map(|k| m.get(*k).and_then(count));
    let in_object = |keys: &[&str], inner: &str| {
        (keys.iter()).find_map(|k| m.get(*k).and_then(|o| o.get(inner)).and_then(num_of))
    };
    let detail = |pairs: &[(&str, &str)]| {
        (pairs.iter()).find_map(|(o, k)| m.get(*o).and_then(|o| o.get(*k)).and_then(num_of))
    };
    let (flat_cache, flat_reasoning) = (pick(CACHE_READ), pick(REASONING));
    let nested_cache = in_object(INPUT, "cacheRead").filter(|_| flat_cache.is_none());
    let nested_reasoning = in_object(OUTPUT, "reasoning").filter(|_| flat_reasoning.is_none());
    Usage {
        input: pick(INPUT).unwrap_or(0),
        output: pick(OUTPUT).unwrap_or(0),
        cache_read: (flat_cache.or(nested_cache).or_else(|| detail(CACHE_DETAIL))).unwrap_or(0),
        reasoning: (flat_reasoning.or(nested_reasoning))
            .or_else(|| detail(REASONING_DETAIL))
            .unwrap_or(0),
        nested: nested_cache.is_some_and(|c| c > 0) || nested_reasoning.is_some_and(|r| r > 0),
    }
}

/// The provider's finish reason in a response value (`finish_reason`, `stop_reason`,
/// `finishReason`), the first non-null one found.
pub(super) fn finish_of(v: &Value, depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    match v {
        Value::Object(m) => ["finish_reason", "stop_reason", "finishReason"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str).map(str::to_owned))
            .or_else(|| m.values().find_map(|c| finish_of(c, depth + 1))),
        Value::Array(a) => a.iter().find_map(|c| finish_of(c, depth + 1)),
        _ => None,
    }
}

/// The model a command line asks for: `--model X`, `--model=X` or `-m X`.
pub(super) fn model_flag(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(v) = w.strip_prefix("--model=") {
            return Some(v.trim_matches(['"', '\'']).to_owned());
        }
        if w == "--model" || w == "-m" {
            return words.next().map(|v| v.trim_matches(['"', '\'']).to_owned());
        }
    }
    None
}

/// A message for errors that carry none (`AI_RetryError` has `reason` and `lastError`).
fn describe_nested(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let name = obj.get("name").and_then(Value::as_str).unwrap_or("error");
    let reason = obj.get("reason").and_then(Value::as_str);
    let last = obj.get("lastError").or_else(|| {
        obj.get("errors")
            .and_then(Value::as_array)
            .and_then(|e| e.last())
    })?;
    let attempts = obj.get("errors").and_then(Value::as_array).map(Vec::len);
    let last_name = last.get("name").and_then(Value::as_str).unwrap_or("error");
    let status = last.get("statusCode").and_then(Value::as_u64);
    let last_msg = last
        .pointer("/data/error/message")
        .or_else(|| last.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = name.to_owned();
    if let Some(r) = reason {
        out.push_str(&format!(" ({r})"));
    }
    if let Some(n) = attempts {
        let s = if n == 1 { "" } else { "s" };
        out.push_str(&format!(" after {n} attempt{s}"));
    }
    out.push_str(&format!("; last error: {last_name}"));
    if let Some(code) = status {
        out.push_str(&format!(" {code}"));
    }
    if !last_msg.is_empty() {
        out.push_str(&format!(": {last_msg}"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part `slim_keeps` is one `slim` leaves as it is.
    #[test]
    fn slim_keeps_only_what_slim_leaves() {
        let long = "x".repeat(MAX_KEPT_STRING + 1);
        for (part, kept) in [
            (
                serde_json::json!({"id": "p", "type": "step-finish", "reason": "stop", "tokens": {"input": 1}}),
                true,
            ),
            (
                serde_json::json!({"id": "p", "state": "odd", "reason": {"unified": "stop"}}),
                true,
            ),
            (
                serde_json::json!({"id": "p", "state": {"status": "completed", "output": "o"}}),
                false,
            ),
            (
                serde_json::json!({"id": "p", "metadata": null, "reason": "stop"}),
                false,
            ),
            (serde_json::json!({"id": "p", "reason": [long]}), false),
            (serde_json::json!("a string"), true),
        ] {
            assert_eq!(slim_keeps(&part), kept, "{part}");
            if kept {
                assert_eq!(slim(part.clone()), part);
            } else {
                assert_ne!(slim(part.clone()), part, "{part}");
            }
        }
    }

    /// Usage in the shapes providers and SDKs log it: flat counts, counts with detail objects,
    /// and the AI SDK v5/v6 providers' counts nested as objects with their total.
    #[test]
    fn usage_of_reads_cache_reads_and_reasoning_flat_and_nested() {
        let usage = |text: &str| usage_of(&serde_json::from_str(text).unwrap());
        let nested = usage(
            r#"{"inputTokens":{"total":12703,"noCache":12511,"cacheRead":192},"outputTokens":{"total":412,"text":97,"reasoning":315}}"#,
        );
        assert_eq!(
            nested,
            Some(Usage {
                input: 12703,
                output: 412,
                cache_read: 192,
                reasoning: 315,
                nested: true
            })
        );
        let flat = usage(
            r#"{"inputTokens":900,"outputTokens":40,"cachedInputTokens":300,"reasoningTokens":12}"#,
        );
        assert_eq!(
            flat.map(|u| (u.cache_read, u.reasoning, u.nested)),
            Some((300, 12, false))
        );
        let details = usage(
            r#"{"inputTokens":900,"inputTokenDetails":{"cacheReadTokens":300},"outputTokens":40,"outputTokenDetails":{"reasoningTokens":12}}"#,
        );
        assert_eq!(
            details.map(|u| (u.cache_read, u.reasoning)),
            Some((300, 12))
        );
        let chat = usage(
            r#"{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":256}}}"#,
        );
        assert_eq!(
            chat.map(|u| (u.input, u.cache_read, u.reasoning)),
            Some((16, 8, 256))
        );
        let anthropic = usage(
            r#"{"anthropic":{"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":7}}}"#,
        );
        assert_eq!(
            anthropic.map(|u| (u.input, u.output, u.cache_read)),
            Some((10, 2, 7))
        );
        // The SDK's empty usage of a provider that sent none.
        assert_eq!(
            usage(r#"{"inputTokenDetails":{},"outputTokenDetails":{}}"#),
            None
        );
    }

    /// The total read from a token object's text is the total of its value, or `None` where an
    /// object repeats a key.
    #[test]
    fn usage_total_of_reads_what_usage_total_counts() {
        let texts = [
            r#"{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}"#,
            r#"{"input":1200,"output":35,"reasoning":0,"cache":{"read":9000,"write":0}}"#,
            r#"{"input":-5,"output":5.7,"total":"12","x":"a","y":null,"z":true,"w":[1,2]}"#,
            r#"{"input":1e3,"output":18446744073709551615,"reasoning":18446744073709551615}"#,
            r#"{"input":123456789012345678901234567890,"cache":{"read":-0.0,"write":0.4}}"#,
            r#"{"a":{"b":{"c":{"d":7}}},"e\u0041":1}"#,
            r#"7"#,
            r#""8""#,
            r#"[]"#,
        ];
        for text in texts {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(usage_total_of(text), Some(usage_total(&v)), "{text}");
        }
        for text in [
            r#"{"input":5,"input":0}"#,
            r#"{"cache":{"read":1,"read":0}}"#,
            r#"{"eA":1,"e\u0041":0}"#,
            r#"{"input":1"#,
            r#"{"input":1} x"#,
        ] {
            assert_eq!(usage_total_of(text), None, "{text}");
        }
        // Keys are told apart by a set: an object of many keys reads as fast as its size allows
        // (a list made this one take seconds), and a key repeated at its end is still found.
        let many: String = (0..50_000).map(|k| format!(r#","k{k}":1"#)).collect();
        let many = format!(r#"{{"input":2{many}}}"#);
        assert_eq!(usage_total_of(&many), Some(50_002));
        let repeated = format!(r#"{},"k0":1}}"#, &many[..many.len() - 1]);
        assert_eq!(usage_total_of(&repeated), None);
    }

    /// The byte-by-byte reading of a plain token object reads what serde's does: every one-byte
    /// mutation of token objects.
    #[test]
    fn plain_token_objects_read_as_serde_reads_them() {
        let seeds = [
            r#"{"input":15835,"output":199,"reasoning":0,"cache":{"read":0,"write":0}}"#,
            r#"{"input":1,"total":999999999999999,"cache":{"read":1,"read":2}}"#,
            r#"{"a":{"b":{"c":{"d":7,"e":10}}},"f":{}}"#,
            // Numbers serde reads otherwise or not at all.
            r#"{"input":007}"#,
            r#"{"output":1.5}"#,
            r#"{"reasoning":-1}"#,
            r#"{"x":1e2}"#,
        ];
        let (mut plain, mut repeated) = (0, 0);
        for seed in seeds {
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                let serde = usage_total_serde(&text);
                match plain_usage(text.as_bytes(), 0, 0) {
                    Some((_, _, end)) if end == text.len() => {
                        assert_eq!(usage_total_of(&text), serde, "{text}");
                        plain += 1;
                        repeated += usize::from(serde.is_none());
                    }
                    _ => {}
                }
            }
        }
        assert!(plain > 300 && repeated > 30, "{plain} {repeated}");
    }

    #[test]
    fn only_banners_wrapped_as_errors_are_informational() {
        let obj = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert!(informational(&obj(serde_json::json!({
            "type": "error", "errorType": "RuntimeError",
            "message": "[verbose] Verbose mode enabled: HTTP requests are logged"
        }))));
        assert!(!informational(&obj(serde_json::json!({
            "type": "error", "errorType": "RuntimeError",
            "message": "connect ECONNREFUSED 127.0.0.1:4096 (could not reach the server)"
        }))));
        assert!(!informational(&obj(serde_json::json!({
            "type": "error", "errorType": "RuntimeError", "message": "started", "stack": "at x"
        }))));
        assert!(!informational(&obj(serde_json::json!({
            "type": "error", "errorType": "UnhandledRejection", "message": "started"
        }))));
    }
}
