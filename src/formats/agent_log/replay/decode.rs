//! Decoding a batch on the pool: records read into what the replay applies, part events read
//! whole from their text.

use serde_json::Value;

use super::events::{num_of, slim, slim_keeps, usage_total, usage_total_of};
use super::peek::Lenient;
use super::{Batch, PartEvent, PreparedPart, Ready, ReadyBatch, RecordSession};
use crate::formats::agent_log::read::{
    Decoded, Decoding, JsonRecord, LogRecord, Pending, RecordView, Texts,
};
use crate::json::log_value::Discard;
use crate::json::scan::Seg;
use crate::json::value::MAX_KEPT_STRING;
use crate::model::Part;
use crate::model::schema;
use crate::source::Span;

/// Decodes the pending JSON values of `batch`, each with how [`LogStats`] counts it.
pub(super) fn decode_batch((records, texts): Batch, decoding: Decoding) -> ReadyBatch {
    records
        .into_iter()
        .map(|record| match record {
            Ok(LogRecord::Pending(p)) => {
                let (ready, kind) = decode_pending(p, &texts, decoding);
                (Ok(ready), Some(kind))
            }
            other => (other.map(Ready::Record), None),
        })
        .collect()
}

/// What [`ready`] makes of a value decoded, read without building its value where it can be: a
/// light record (`decoding.light`) or a part event ([`part_event`]) is read from its text. The
/// text is borrowed from the batch's `texts`, not shared, until a record keeps it. A line taken
/// whole that does not decode is [`Ready::Unframed`].
fn decode_pending(
    p: Pending,
    texts: &std::sync::Arc<Texts>,
    mut decoding: Decoding,
) -> (Ready, Decoded) {
    if let Some(view) = p.view(texts) {
        if let Some(light) = decoding.light.and_then(|filter| filter(view.text)) {
            let record = LogRecord::Light {
                span: view.span,
                light,
            };
            return (Ready::Record(record), Decoded::JsonObject);
        }
        if let Some(event) = part_event(&view) {
            return (Ready::Part(Box::new(event)), Decoded::JsonObject);
        }
        // Not light: `decode` need not ask again.
        decoding.light = None;
    }
    let whole_line = p.whole_line();
    let decoded = p.decode(texts, decoding);
    let kind = decoded.decoded();
    if whole_line && kind == Decoded::Undecodable {
        return (Ready::Unframed, kind);
    }
    (ready(decoded), kind)
}

/// A part event (`step_start`, `step_finish`, `tool_use`, `text`, `reasoning`) read from its
/// text, without building its value: what [`ready`] makes of it. Most of a log's bytes are in
/// these records (a tool's output, a step's two events), and building a `Value` of every key of
/// each, to validate it, slim it and read it, costs more than the rest of the replay. `None`
/// leaves the record to [`ready`], which reads it whole:
///
/// * unless the record reads as an object whose `type`, `service`, `message` and `sessionID` are
///   each written at most once, and [`ready`] would take it for a part event;
/// * unless its part satisfies the schema (so it has no issue to locate) and is a text,
///   reasoning, tool or step part, which `model::read::logged_part` reads as [`slim`] and
///   `Part::from_value` read it;
/// * unless the part's `id`, `sessionID`, `messageID`, `reason`, `tokens` and `model` are each
///   written at most once, and a `step_finish`'s token counts repeat no key.
///
/// The record is walked by `model::conform`, which says yes only to JSON that serde_json reads
/// (and no to anything it is not sure of), so a record this reads is one `log_value::parse`
/// reads too. The test `part_events_read_as_ready_reads_them` holds the two readings together.
fn part_event(rec: &RecordView<'_>) -> Option<PartEvent> {
    let text = rec.text;
    // Most records are not part events: a look for the key costs less than reading the
    // envelope. The finder is built once.
    static PART: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"part\""));
    PART.find(text.as_bytes())?;
    // The record is walked once: validated, its part read, and where its members are found.
    let logged = crate::model::read::logged_part(text, MAX_KEPT_STRING)?;
    let raw = |r: Option<(usize, usize)>| r.and_then(|(s, e)| text.get(s..e));
    let str_at = |r| raw(r).and_then(crate::model::read::json_str);
    let ty = str_at(logged.top.ty)?;
    let (service, message) = (str_at(logged.top.service), str_at(logged.top.message));
    if !matches!(
        &*ty,
        "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
    ) || (service.as_deref() == Some("bus") && message.as_deref() == Some("publishing"))
        || message.as_deref() == Some("unhandled")
    {
        return None;
    }
    let (part, members) = (logged.part, logged.members);
    let span = |r: Option<(usize, usize)>| r.map(|(s, e)| rec.span_of(s, e));
    let step = match &*ty {
        "step_finish" => {
            // Small values (a reason, a token count object, model ids), read as `ready` reads
            // them, without building a `Value` where it can.
            let reason = match raw(members.reason) {
                None | Some("null") => (String::new(), false),
                Some(raw) => match crate::model::read::json_str(raw) {
                    Some(reason) => (reason.into_owned(), false),
                    None => reason_of(Some(&serde_json::from_str::<Value>(raw).ok()?)),
                },
            };
            let model = match raw(members.model) {
                Some(raw) => serde_json::from_str::<ModelIds>(raw).ok()?,
                None => ModelIds::default(),
            };
            let (zero_usage, details) = match raw(members.tokens) {
                Some(raw) => match usage_total_of(raw)? {
                    0 => (true, (0, 0)),
                    // The cache reads and reasoning of a step that recorded any.
                    _ => (false, recorded_details(&serde_json::from_str(raw).ok()?)),
                },
                None => (true, (0, 0)),
            };
            let read = StepRead {
                message_id: &part.message_id,
                part_id: &part.id,
                reason,
                reason_span: span(members.reason),
                zero_usage,
                details,
                tokens_span: span(members.tokens),
                model,
            };
            Some(Box::new(read.finish()))
        }
        _ => None,
    };
    let status_span = part.tool().and_then(|_| span(members.status));
    Some(PartEvent {
        span: rec.span,
        session: RecordSession::new(str_at(logged.top.session_id), &part),
        prepared: PreparedPart {
            part,
            issues: Vec::new(),
            part_span: rec.span,
            status_span,
        },
        step,
    })
}

/// A part event's part validated and read into the model (see [`Ready`]); any other record as
/// it is.
fn ready(record: LogRecord) -> Ready {
    let LogRecord::Json(mut rec) = record else {
        return Ready::Record(record);
    };
    let Some(obj) = rec.value.as_object() else {
        return Ready::Record(LogRecord::Json(rec));
    };
    let s = |k: &str| obj.get(k).and_then(Value::as_str);
    // The records `apply_json` hands to `apply_part`.
    let ty = s("type").unwrap_or_default();
    let is_part_event = matches!(
        ty,
        "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
    ) && obj.get("part").is_some_and(Value::is_object)
        && !(s("service") == Some("bus") && s("message") == Some("publishing"))
        && s("message") != Some("unhandled");
    if !is_part_event {
        // Only a part event's part may have been read with stand-ins (see `parse_object`).
        if rec.value.get("part").is_some_and(Value::is_object)
            && let Ok(value) = serde_json::from_str(&rec.text)
        {
            rec.value = value;
        }
        return Ready::Record(LogRecord::Json(rec));
    }
    // What `apply_json` reads of a part event, read here.
    let session_id = s("sessionID").map(str::to_owned);
    let (prepared, step) = if ty == "step_finish" {
        // Read where it is, unless slimming it would change it.
        let part = rec.value.get("part").unwrap_or(&Value::Null);
        let prepared = prepare(&rec, std::borrow::Cow::Borrowed(part));
        (prepared, Some(Box::new(step_finish_of(&rec))))
    } else {
        let part = match rec.value.get_mut("part") {
            Some(part) => std::mem::replace(part, Value::Null),
            None => Value::Null,
        };
        (prepare(&rec, std::borrow::Cow::Owned(part)), None)
    };
    Ready::Part(Box::new(PartEvent {
        span: rec.span,
        session: RecordSession::new(session_id.map(Into::into), &prepared.part),
        prepared,
        step,
    }))
}

/// What a `step_finish` record says of its step.
pub(super) fn step_finish_of(rec: &JsonRecord) -> crate::session::StepFinish {
    let part = &rec.value["part"];
    let s = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default();
    let read = StepRead {
        message_id: s("messageID"),
        part_id: s("id"),
        reason: reason_of(part.get("reason")),
        reason_span: rec.locate(&["part".into(), "reason".into()]),
        zero_usage: part.get("tokens").is_none_or(|t| usage_total(t) == 0),
        details: part.get("tokens").map_or((0, 0), recorded_details),
        tokens_span: rec.locate(&["part".into(), "tokens".into()]),
        model: ModelIds::of(part.get("model")),
    };
    read.finish()
}

/// The cache reads (`cache.read`) and reasoning tokens (`reasoning`) of a step's token object,
/// 0 where it has none.
fn recorded_details(tokens: &Value) -> (u64, u64) {
    let count = |v: Option<&Value>| v.and_then(num_of).unwrap_or(0);
    (
        count(tokens.get("cache").and_then(|c| c.get("read"))),
        count(tokens.get("reasoning")),
    )
}

/// A step's reason as kept, and whether it was not a string (it is then kept as JSON).
fn reason_of(reason: Option<&Value>) -> (String, bool) {
    match reason {
        Some(Value::String(r)) => (r.clone(), false),
        Some(Value::Null) | None => (String::new(), false),
        Some(other) => (other.to_string(), true),
    }
}

/// The model ids of a `step_finish`'s `model`: its `requestedModelID` and `respondedModelID`
/// when they are strings, and nothing of any other value. Read from the text (by
/// `part_event`) as from a `Value` (by `ready`): a key written twice counts as its last value,
/// as in a `Value`. Only an object is read from the text; a model of another shape (none seen
/// in a real log) fails there, and `part_event` leaves the record to `ready`.
#[derive(Debug, Default, PartialEq)]
struct ModelIds {
    requested: Option<String>,
    responded: Option<String>,
}

impl ModelIds {
    fn of(model: Option<&Value>) -> Self {
        let id = |k: &str| {
            model
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        ModelIds {
            requested: id("requestedModelID"),
            responded: id("respondedModelID"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for ModelIds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ModelIds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ModelIds, A::Error> {
                let mut ids = ModelIds::default();
                while let Some(Lenient(key)) = map.next_key::<Lenient<'de>>()? {
                    let slot = match key.as_deref() {
                        Some("requestedModelID") => &mut ids.requested,
                        Some("respondedModelID") => &mut ids.responded,
                        _ => {
                            map.next_value_seed(Discard)?;
                            continue;
                        }
                    };
                    let Lenient(id) = map.next_value()?;
                    *slot = id.map(std::borrow::Cow::into_owned);
                }
                Ok(ids)
            }
        }
        d.deserialize_map(V)
    }
}

/// The members of a `step_finish`'s part a [`crate::session::StepFinish`] is made of, however
/// they were read (from the record's value, or by [`part_event`]).
struct StepRead<'a> {
    pub(super) message_id: &'a str,
    part_id: &'a str,
    /// See [`reason_of`].
    reason: (String, bool),
    /// Where the reason is.
    reason_span: Option<Span>,
    /// Every token count is zero, or there are none.
    pub(super) zero_usage: bool,
    /// The cache reads and reasoning tokens recorded (see [`recorded_details`]).
    details: (u64, u64),
    /// Where the token counts are.
    tokens_span: Option<Span>,
    pub(super) model: ModelIds,
}

impl StepRead<'_> {
    pub(super) fn finish(self) -> crate::session::StepFinish {
        let (reason, reason_not_string) = self.reason;
        crate::session::StepFinish {
            message_id: self.message_id.to_owned(),
            part_id: self.part_id.to_owned(),
            reason,
            reason_not_string,
            reason_span: self.reason_span,
            zero_usage: self.zero_usage,
            cache_read: self.details.0,
            reasoning: self.details.1,
            tokens_span: self.tokens_span.map(|t| t.head()),
            requested_model: self.model.requested,
            responded_model: self.model.responded,
        }
    }
}

/// Validates the part of a part event (`raw`, the value of the record's `part`) and reads it
/// into the model.
pub(super) fn prepare_part(rec: &JsonRecord, raw: Value) -> PreparedPart {
    prepare(rec, std::borrow::Cow::Owned(raw))
}

/// [`prepare_part`], on a part that may be borrowed: it is copied only when [`slim`] changes it.
fn prepare(rec: &JsonRecord, raw: std::borrow::Cow<'_, Value>) -> PreparedPart {
    // One locator for all the issues: many can be in one long array.
    let mut locator = crate::json::scan::Locator::new(&rec.text);
    let issues = schema::validate_part(&raw)
        .into_iter()
        .map(|issue| {
            let mut path: Vec<Seg<'_>> = vec![Seg::Key("part")];
            path.extend(issue.path.keys());
            // A missing field is pointed at through its parent object.
            let span = (locator.locate(&path))
                .or_else(|| locator.locate(&path[..path.len().saturating_sub(1)]))
                .map(|(s, e)| rec.span_of(s, e));
            (issue.clone(), span)
        })
        .collect::<Vec<_>>();
    let part_span = match issues.is_empty() {
        true => rec.span,
        false => rec.locate(&[Seg::Key("part")]).unwrap_or(rec.span),
    };
    let part = match raw {
        std::borrow::Cow::Borrowed(raw) if slim_keeps(raw) => Part::from_value(raw),
        raw => Part::from_value(&slim(raw.into_owned())),
    };
    let status_span = part
        .tool()
        .and_then(|_| rec.locate(&["part".into(), "state".into(), "status".into()]));
    PreparedPart {
        part,
        issues,
        part_span,
        status_span,
    }
}

#[cfg(test)]
mod tests {
    use super::super::peek::light;
    use super::super::peek::parse_object;
    use super::*;
    use crate::formats::agent_log::read::AgentLogReader;
    use crate::source::FileId;

    /// Reads a one-record log both ways: [`part_event`] on the record's text, and [`ready`] on
    /// it decoded.
    fn both_ways(text: &str) -> Option<(Option<PartEvent>, Ready)> {
        let (p, texts, decoding) = pending(text)?;
        // As `decode_pending` tries it: after the light reading.
        let fast = p
            .view(&texts)
            .filter(|rec| light(rec.text).is_none())
            .and_then(|rec| part_event(&rec));
        Some((fast, ready(p.decode(&texts, decoding))))
    }

    /// The first value of a log, not decoded yet, as the replay's reader yields it.
    fn pending(text: &str) -> Option<(Pending, std::sync::Arc<Texts>, Decoding)> {
        let mut reader = AgentLogReader::new(text.as_bytes(), FileId(0))
            .with_light(light)
            .with_object_parser(parse_object)
            .deferred();
        let decoding = reader.decoding();
        let Some(Ok(LogRecord::Pending(p))) = reader.next() else {
            return None;
        };
        Some((p, reader.take_texts(), decoding))
    }

    /// [`decode_pending`], which reads a light record or a part event from its text, reads every
    /// record as [`ready`] reads it decoded: logger entries, bus events, part events, a raw
    /// error dump, and every one-byte mutation of them.
    #[test]
    fn records_read_from_their_text_read_as_decoded() {
        let seeds = [
            r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"session.prompt","step":10,"sessionID":"ses_1","message":"loop"}"#,
            r#"{"type":"message.part.updated","level":"info","timestamp":"2026-03-30T12:02:33.088Z","service":"bus","message":"publishing"}"#,
            r#"{"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"busy"}}}"#,
            r#"{"type":"log","part":{"id":"p"},"message":"m \"part\""}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"hi","time":{"start":1,"end":2}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"stop","cost":0,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
            "ZodError: [\n  {\n    \"code\": \"invalid_union\"\n  }\n]\n",
        ];
        let (mut light_read, mut parts, mut all) = (0, 0, 0);
        for seed in seeds {
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                let Some((p, texts, decoding)) = pending(&text) else {
                    continue;
                };
                all += 1;
                let slow = ready(p.clone().decode(&texts, decoding));
                let (either, _) = decode_pending(p, &texts, decoding);
                light_read += usize::from(matches!(either, Ready::Record(LogRecord::Light { .. })));
                parts += usize::from(matches!(either, Ready::Part(_)));
                assert_eq!(format!("{either:?}"), format!("{slow:?}"), "{text}");
            }
        }
        assert!(
            light_read > 300 && parts > 300 && all > 1500,
            "{light_read} {parts} {all}"
        );
    }

    /// A part event read from its text is what [`ready`] reads of it decoded: real step, tool,
    /// text and reasoning events, events with every heavy field, and every one-byte mutation of
    /// them.
    #[test]
    fn part_events_read_as_ready_reads_them() {
        let seeds = [
            r#"{"type":"step_start","timestamp":1771057754652,"sessionID":"ses_3a4bb6d8dffeiS5FRAjqmkJinT","part":{"id":"prt_c5b44a795001zQe56nCjjJYlaI","sessionID":"ses_3a4bb6d8dffeiS5FRAjqmkJinT","messageID":"msg_c5b449314001c6ZX5L0bedtpJ6","type":"step-start","snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904"}}"#,
            r#"{"type":"step_finish","timestamp":1771057754652,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"tool-calls","snapshot":"4b82","cost":0.0125,"tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":3,"write":0}}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"id":"prt_3","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"stop","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"requestedModelID":"a","respondedModelID":"b"}},"level":"info"}"#,
            "{ \"type\" : \"step_finish\",\n \"part\": {\"type\":\"step-finish\",\"id\":\"p\\u00e9\",\"messageID\":\"m\",\"sessionID\":\"s\",\"reason\":\"st\\nop\",\"cost\":0.5,\"tokens\":{\"input\":1,\"output\":2,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0}}}, \"sessionID\": \"ses_é\" }",
            "{\"type\":\"step_finish\",\"part\" : { \"reason\" : \"length\" , \"id\" : \"prt_9\", \"type\" : \"step-finish\", \"sessionID\":\"ses_9\",\"messageID\":\"msg_9\", \"model\" : {\"requestedModelID\":\"m1\", \"respondedModelID\" : \"m2\"}, \"cost\" : 1.5 , \"tokens\" : { \"input\" : 3, \"output\":4,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0} } } , \"sessionID\":\"ses_9\"}",
            // Models whose keys repeat (the last counts) or are escaped, an escaped reason.
            r#"{"type":"step_finish","part":{"id":"p","sessionID":"s","messageID":"m","type":"step-finish","reason":"stop","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"requestedModelID":"a","requestedModelID":"b","respondedModelID":5,"x":[1,{"y":null}]}}}"#,
            r#"{"type":"step_finish","part":{"id":"p","sessionID":"s","messageID":"m","type":"step-finish","reason":"a\"b","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"respondedModelID":"m\u00e9","requestedModelID":null}}}"#,
            // Tool, text and reasoning events of a real log.
            r#"{"type":"tool_use","timestamp":1774872162685,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3e9ff17b001n5aezfoA0LPbIK","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3e9fcc06001VD5n7TeV1J94hI","type":"tool","callID":"call_function_7h2yanagmomm_1","tool":"bash","state":{"status":"pending","input":{},"raw":""}}}"#,
            r#"{"type":"tool_use","timestamp":1774872215835,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3ea0c050001M4O7kbREQ0fpjm","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3ea0adb0001Krbkwq2lpK0suw","type":"tool","callID":"call_function_dsio76bonyjn_1","tool":"grep","state":{"status":"completed","input":{"pattern":"ACAD_GROUP","include":"*.pas"},"output":"No files found","title":"ACAD_GROUP","metadata":{"matches":0,"truncated":false},"time":{"start":1774872215812,"end":1774872215834}}}}"#,
            r#"{"type":"tool_use","timestamp":1774872343215,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3ea2b2a2001JMnJK4rHE7DZ3y","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3ea2a43c001rCciHVMSNS0cDI","type":"tool","callID":"call_function_ilh011x44gj2_1","tool":"grep","state":{"status":"error","input":{"path":"/tmp","pattern":"^5\\n42$"},"error":"Error: ripgrep failed: rg: the literal \"\\n\" is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\n","time":{"start":1774872343212,"end":1774872343214}}}}"#,
            r#"{"type":"text","timestamp":1774872162683,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3e9fef15001xE6iYua1mYejok","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3e9fcc06001VD5n7TeV1J94hI","type":"text","text":"I'll start by checking the current branch.","time":{"start":1774872162682,"end":1774872162682}}}"#,
            r#"{"type":"reasoning","sessionID":"ses_1","part":{"id":"prt_r","sessionID":"ses_1","messageID":"msg_1","type":"reasoning","text":"Think \u00e9 first","metadata":{"anthropic":{"signature":"x"}},"time":{"start":1,"end":2}}}"#,
        ];
        // Strings longer than a log keeps (cut inside a two-byte character), with every heavy
        // field a tool part can carry, and a part-level metadata.
        let long = format!("a{}", "é".repeat(300));
        let heavy = format!(
            r#"{{"type":"tool_use","sessionID":"ses_1","part":{{"id":"prt_h","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"read","metadata":{{"k":"{long}"}},"state":{{"status":"completed","input":{{"filePath":"{long}"}},"output":"{long}","title":"{long}","raw":"{long}","metadata":{{"preview":"{long}"}},"attachments":[],"time":{{"start":1,"end":2}}}}}}}}"#
        );
        let failed = format!(
            r#"{{"type":"tool_use","sessionID":"ses_1","part":{{"id":"prt_e","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c2","tool":"bash","state":{{"status":"error","input":{{ }},"error":"{long}","time":{{"start":1,"end":2}}}}}}}}"#
        );
        let text = format!(
            r#"{{"type":"text","part":{{"id":"prt_t","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"{long}","synthetic":true,"metadata":{{"a":1}}}}}}"#
        );
        let seeds: Vec<String> = seeds
            .into_iter()
            .map(str::to_owned)
            .chain([heavy, failed, text])
            .collect();
        let (mut fast, mut all) = (0, 0);
        for seed in &seeds {
            assert!(
                matches!(both_ways(seed), Some((Some(_), _))),
                "read from its text: {seed}"
            );
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                all += 1;
                let Some((Some(event), slow)) = both_ways(&text) else {
                    continue;
                };
                fast += 1;
                let Ready::Part(slow) = slow else {
                    panic!("read as a part event, not by ready: {text}");
                };
                assert_eq!(format!("{event:?}"), format!("{slow:?}"), "{text}");
            }
        }
        assert!(fast * 4 > all, "{fast} of {all}");
        // A model that is not an object is left to the full reading, which reads no ids from it.
        for model in [
            r#""opencode/x""#,
            r#"[{"requestedModelID":"a"}]"#,
            "null",
            "7",
        ] {
            let text = format!(
                r#"{{"type":"step_finish","part":{{"id":"p","sessionID":"s","messageID":"m","type":"step-finish","reason":"stop","cost":0,"tokens":{{"input":0,"output":0,"reasoning":0,"cache":{{"read":0,"write":0}}}},"model":{model}}}}}"#
            );
            let Some((None, Ready::Part(slow))) = both_ways(&text) else {
                panic!("read from its text, or not as a part event: {text}");
            };
            let step = slow.step.expect("a step_finish's step");
            assert_eq!(
                (step.requested_model, step.responded_model),
                (None, None),
                "{text}"
            );
        }
    }
}
