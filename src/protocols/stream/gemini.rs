//! Gemini `streamGenerateContent` chunks → stream parts, as the AI SDK's google provider maps
//! them.
//!
//! Every chunk is a `GenerateContentResponse`: `candidates[0].content.parts[]`, a
//! `finishReason` on the candidate's last chunk, `usageMetadata`, `modelVersion`, `responseId`
//! (`data: {…}` with `?alt=sse`, or one per line in a JSON-lines capture).
//!
//! * text parts: consecutive text parts share one text block, `thought: true` parts one
//!   reasoning block; an empty text (a part carrying only a `thoughtSignature`) is nothing;
//! * function calls: a `functionCall` with `name` and `args` is a whole call at once (no `args`:
//!   `{}`); with `willContinue: true` or `partialArgs` it streams: each later chunk's
//!   `partialArgs` (`{jsonPath, stringValue|numberValue|boolValue|nullValue, willContinue}`)
//!   builds the arguments, and the call is finalized when a chunk's arguments no longer continue
//!   or by an empty terminal `functionCall: {}`. The SDK does not finalize a call still streaming
//!   when the stream ends: it never gets its `tool-call` (rewind reports the finish that came
//!   while it was open). A call without an `id` gets a generated one, as in the SDK;
//! * `finishReason` maps to the unified reasons (`STOP` with tool calls is `tool-calls`,
//!   `SAFETY`/`RECITATION`/… `content-filter`, `MALFORMED_FUNCTION_CALL` `error`) and is the
//!   stream's terminal event;
//! * `{"error": {code, message, status}}` is the API's error in the stream. The SDK's schema
//!   lets it through silently (the stream finishes as `other`); rewind records it as the
//!   provider's error, without an `error` part the SDK never emits.
//!
//! Code execution and server-side tool parts are read and not replayed.

use serde_json::{Map, Value};

use super::envelope;
use super::part::PartKind;
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected, s};
use crate::model::schema::{self, Ty, opt};
use crate::session::OpenAtEnd;
use crate::source::Span;

const STR: Ty = Ty::Nullable(&Ty::Str);
const PART: Ty = Ty::Obj(&[
    opt("text", STR),
    opt("thought", Ty::Nullable(&Ty::Bool)),
    opt("thoughtSignature", STR),
]);
const CONTENT: Ty = Ty::Obj(&[opt("parts", Ty::Nullable(&Ty::Array(&PART)))]);
const CANDIDATE: Ty = Ty::Obj(&[
    opt("content", Ty::Nullable(&CONTENT)),
    opt("finishReason", STR),
    opt("finishMessage", STR),
]);
const USAGE: Ty = Ty::Obj(&[
    opt("promptTokenCount", Ty::Nullable(&Ty::Num)),
    opt("candidatesTokenCount", Ty::Nullable(&Ty::Num)),
    opt("thoughtsTokenCount", Ty::Nullable(&Ty::Num)),
]);

/// The chunk schema (the fields the SDK reads; unknown keys pass).
static CHUNK: Ty = Ty::Obj(&[
    opt("responseId", STR),
    opt("candidates", Ty::Nullable(&Ty::Array(&CANDIDATE))),
    opt("usageMetadata", Ty::Nullable(&USAGE)),
]);

struct Active {
    id: String,
    name: String,
    args: Value,
    at: Span,
}

/// The decoder.
#[derive(Default)]
pub struct Gemini {
    started: bool,
    text_block: Option<String>,
    reasoning_block: Option<String>,
    blocks: u64,
    generated: u64,
    active: Vec<Active>,
    has_tool_calls: bool,
    finish_reason: Option<String>,
    usage: (u64, u64),
}

/// Where a `partialArgs` value goes: `$.a.b[0].c` → `a`, `b`, 0, `c`.
#[derive(Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Vec<Seg> {
    let raw = path.strip_prefix('$').unwrap_or(path);
    let mut segs = Vec::new();
    for piece in raw.split('.').filter(|p| !p.is_empty()) {
        let mut rest = piece;
        if let Some(k) = rest.find('[') {
            if k > 0 {
                segs.push(Seg::Key(rest[..k].to_owned()));
            }
            rest = &rest[k..];
            while let Some(r) = rest.strip_prefix('[') {
                let Some(end) = r.find(']') else { break };
                match r[..end].parse::<usize>() {
                    Ok(i) => segs.push(Seg::Index(i)),
                    Err(_) => segs.push(Seg::Key(r[..end].trim_matches('\'').to_owned())),
                }
                rest = &r[end + 1..];
            }
        } else {
            segs.push(Seg::Key(rest.to_owned()));
        }
    }
    segs
}

/// The slot at `path` in `root`, made as needed.
fn slot<'v>(root: &'v mut Value, path: &[Seg]) -> &'v mut Value {
    let mut cur = root;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                match cur {
                    Value::Object(m) => m.entry(k.clone()).or_insert(Value::Null),
                    other => other,
                }
            }
            Seg::Index(i) => {
                if !cur.is_array() {
                    *cur = Value::Array(Vec::new());
                }
                match cur {
                    Value::Array(a) => {
                        while a.len() <= *i {
                            a.push(Value::Null);
                        }
                        &mut a[*i]
                    }
                    other => other,
                }
            }
        };
    }
    cur
}

/// Applies one chunk's `partialArgs` to the arguments built so far.
fn apply_partial_args(args: &mut Value, partial: &[Value]) {
    for arg in partial {
        let Some(path) = s(arg, "jsonPath") else {
            continue;
        };
        let segs = parse_path(path);
        if segs.is_empty() {
            continue;
        }
        let target = slot(args, &segs);
        if let Some(text) = s(arg, "stringValue") {
            match target {
                Value::String(existing) => existing.push_str(text),
                other => *other = Value::String(text.to_owned()),
            }
        } else if let Some(n) = arg.get("numberValue").filter(|v| v.is_number()) {
            *target = n.clone();
        } else if let Some(b) = arg.get("boolValue").filter(|v| v.is_boolean()) {
            *target = b.clone();
        } else if arg.get("nullValue").is_some() {
            *target = Value::Null;
        }
    }
}

fn continues(call: &Value) -> bool {
    call.get("willContinue").and_then(Value::as_bool) == Some(true)
}

impl Gemini {
    pub fn new() -> Self {
        Self::default()
    }

    fn call_id(&mut self, call: &Value) -> String {
        match s(call, "id").filter(|i| !i.is_empty()) {
            Some(id) => id.to_owned(),
            None => {
                self.generated += 1;
                format!("gemini-call-{}", self.generated)
            }
        }
    }

    fn finalize(&mut self, out: &mut Out) {
        let Some(a) = self.active.pop() else {
            return;
        };
        let input = if a.args.is_null() {
            "{}".to_owned()
        } else {
            a.args.to_string()
        };
        out.part(PartKind::ToolInputDelta {
            id: a.id.clone(),
            delta: input.clone(),
        });
        out.part(PartKind::ToolInputEnd { id: a.id.clone() });
        out.part(PartKind::ToolCall {
            id: a.id,
            name: a.name,
            input,
            provider_executed: false,
        });
        self.has_tool_calls = true;
    }

    /// A call in one chunk; `delta`: it came with its `args` (the SDK streams them as one delta).
    fn whole_call(
        &mut self,
        id: String,
        name: String,
        input: String,
        delta: bool,
        k: usize,
        out: &mut Out,
    ) {
        out.part_at(
            PartKind::ToolInputStart {
                id: id.clone(),
                name: name.clone(),
                provider_executed: false,
            },
            Focus::path(&[
                "candidates",
                "0",
                "content",
                "parts",
                &k.to_string(),
                "functionCall",
            ]),
        );
        if delta {
            out.part(PartKind::ToolInputDelta {
                id: id.clone(),
                delta: input.clone(),
            });
        }
        out.part(PartKind::ToolInputEnd { id: id.clone() });
        out.part(PartKind::ToolCall {
            id,
            name,
            input,
            provider_executed: false,
        });
        self.has_tool_calls = true;
    }

    fn function_call(&mut self, call: &Value, k: usize, at: Span, out: &mut Out) {
        let name = s(call, "name");
        let partial = call.get("partialArgs").and_then(Value::as_array);
        let args = call.get("args").filter(|a| !a.is_null());
        let streaming = partial.is_some() || (name.is_some() && continues(call));
        let terminal = name.is_none()
            && args.is_none()
            && partial.is_none()
            && call.get("willContinue").is_none_or(Value::is_null);
        let done_now = |p: &[Value]| {
            !continues(call)
                && p.iter()
                    .all(|a| a.get("willContinue").and_then(Value::as_bool) != Some(true))
        };
        if streaming {
            if let Some(name) = name {
                let id = self.call_id(call);
                out.part_at(
                    PartKind::ToolInputStart {
                        id: id.clone(),
                        name: name.to_owned(),
                        provider_executed: false,
                    },
                    Focus::path(&[
                        "candidates",
                        "0",
                        "content",
                        "parts",
                        &k.to_string(),
                        "functionCall",
                    ]),
                );
                let mut built = Value::Null;
                if let Some(p) = partial {
                    apply_partial_args(&mut built, p);
                }
                self.active.push(Active {
                    id,
                    name: name.to_owned(),
                    args: built,
                    at,
                });
                if partial.is_some_and(|p| done_now(p)) {
                    self.finalize(out);
                }
            } else if let (Some(p), Some(a)) = (partial, self.active.last_mut()) {
                apply_partial_args(&mut a.args, p);
                if done_now(p) {
                    self.finalize(out);
                }
            }
        } else if terminal {
            self.finalize(out);
        } else if let Some(name) = name {
            let id = self.call_id(call);
            let input = match args {
                Some(Value::String(text)) => text.clone(),
                Some(v) => v.to_string(),
                None => "{}".to_owned(),
            };
            self.whole_call(id, name.to_owned(), input, args.is_some(), k, out);
        }
    }

    /// A text part: a delta of the open thinking block or the open text block, the other one
    /// closed first.
    fn text_part(&mut self, text: &str, thought: bool, out: &mut Out) {
        if thought {
            if let Some(id) = self.text_block.take() {
                out.part(PartKind::TextEnd { id });
            }
            let id = match &self.reasoning_block {
                Some(id) => id.clone(),
                None => {
                    let id = self.blocks.to_string();
                    self.blocks += 1;
                    self.reasoning_block = Some(id.clone());
                    out.part(PartKind::ReasoningStart { id: id.clone() });
                    id
                }
            };
            out.part(PartKind::ReasoningDelta {
                id,
                delta: text.to_owned(),
            });
        } else {
            if let Some(id) = self.reasoning_block.take() {
                out.part(PartKind::ReasoningEnd { id });
            }
            let id = match &self.text_block {
                Some(id) => id.clone(),
                None => {
                    let id = self.blocks.to_string();
                    self.blocks += 1;
                    self.text_block = Some(id.clone());
                    out.part(PartKind::TextStart { id: id.clone() });
                    id
                }
            };
            out.part(PartKind::TextDelta {
                id,
                delta: text.to_owned(),
            });
        }
    }

    fn chunk(&mut self, v: &Value, at: Span, out: &mut Out) {
        if let Some(err) = v.get("error").filter(|e| e.is_object()) {
            let name = match (s(err, "status"), err.get("code")) {
                (Some(status), _) => status.to_owned(),
                (None, Some(code)) => code.to_string(),
                (None, None) => "error".to_owned(),
            };
            out.provider_errors.push(ProviderError {
                name,
                message: s(err, "message").unwrap_or_default().to_owned(),
                focus: Focus::path(&["error", "message"]),
                data: err.clone(),
            });
            return;
        }
        out.foreign = !["candidates", "usageMetadata", "responseId", "modelVersion"]
            .iter()
            .any(|k| v.get(*k).is_some());
        if !self.started {
            self.started = true;
            out.part(PartKind::ResponseMetadata {
                id: s(v, "responseId").map(str::to_owned),
            });
            out.part(PartKind::StartStep);
        }
        if let Some(u) = v.get("usageMetadata").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0) as u64;
            self.usage = (
                n("promptTokenCount"),
                n("candidatesTokenCount") + n("thoughtsTokenCount"),
            );
        }
        let Some(candidate) = v
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        let parts = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for part in parts {
            if let Some(text) = s(part, "text").filter(|t| !t.is_empty()) {
                let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
                self.text_part(text, thought, out);
            }
        }
        for (k, part) in parts.iter().enumerate() {
            if let Some(call) = part.get("functionCall").filter(|c| c.is_object()) {
                self.function_call(call, k, at, out);
            }
        }
        if let Some(reason) = s(candidate, "finishReason") {
            for a in &self.active {
                out.anomaly(
                    format!(
                        "the candidate finished (`{reason}`) while tool call `{}` ({}) was still streaming its arguments: its terminal `functionCall` chunk never came, so the SDK never emits the call",
                        a.name, a.id
                    ),
                    false,
                    Focus::path(&["candidates", "0", "finishReason"]),
                );
            }
            out.finish_reason = Some(reason.to_owned());
            out.terminal = Some(format!("finishReason `{reason}`"));
            self.finish_reason = Some(reason.to_owned());
        }
    }
}

/// Gemini's finish reasons onto the unified values (the SDK's `mapGoogleFinishReason`).
pub fn unified(raw: &str, has_tool_calls: bool) -> &'static str {
    match raw {
        "STOP" if has_tool_calls => "tool-calls",
        "STOP" => "stop",
        "MAX_TOKENS" => "length",
        "IMAGE_SAFETY" | "RECITATION" | "SAFETY" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
            "content-filter"
        }
        "MALFORMED_FUNCTION_CALL" => "error",
        _ => "other",
    }
}

impl Decoder for Gemini {
    fn protocol(&self) -> Protocol {
        Protocol::Gemini
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if envelope::is_done(data) {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(Rejected::Json)?;
        let issues = schema::validate(&v, &CHUNK);
        if !issues.is_empty() {
            return Err(Rejected::Schema(issues));
        }
        self.chunk(&v, at, out);
        Ok(())
    }

    fn flush(&mut self, out: &mut Out) {
        if !self.started {
            return;
        }
        if let Some(id) = self.text_block.take() {
            out.part(PartKind::TextEnd { id });
        }
        if let Some(id) = self.reasoning_block.take() {
            out.part(PartKind::ReasoningEnd { id });
        }
        let reason = match self.finish_reason.as_deref() {
            Some(r) => unified(r, self.has_tool_calls),
            None => "other",
        };
        out.part(PartKind::FinishStep {
            reason: reason.into(),
            input_tokens: self.usage.0,
            output_tokens: self.usage.1,
        });
    }

    fn open_at_end(&self) -> Vec<OpenAtEnd> {
        self.active
            .iter()
            .map(|a| {
                OpenAtEnd::call(
                    format!(
                        "tool call `{}` ({}) was still streaming its arguments",
                        a.name, a.id
                    ),
                    a.at,
                    &a.id,
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::stream::protocol::run_lines;

    #[test]
    fn partial_args_build_the_arguments() {
        let mut args = Value::Null;
        apply_partial_args(
            &mut args,
            &serde_json::from_str::<Vec<Value>>(
                r#"[{"jsonPath":"$.ops[0].name","stringValue":"ap","willContinue":true},
                    {"jsonPath":"$.ops[0].name","stringValue":"ple"},
                    {"jsonPath":"$.ops[0].price","numberValue":0.5},
                    {"jsonPath":"$.ops[1].ok","boolValue":true}]"#,
            )
            .unwrap_or_default(),
        );
        assert_eq!(
            args.to_string(),
            r#"{"ops":[{"name":"apple","price":0.5},{"ok":true}]}"#
        );
    }

    #[test]
    fn streamed_call_then_terminal_chunk() {
        let (parts, rejected) = run_lines(
            &mut Gemini::new(),
            &[
                r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"getWeather","willContinue":true}}]}}],"responseId":"r"}"#,
                r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":"Boston","willContinue":true}],"willContinue":true}}]}}]}"#,
                r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":3}}"#,
            ],
        );
        assert_eq!(rejected, 0);
        assert_eq!(
            parts,
            [
                "response-metadata",
                "start-step",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-end",
                "tool-call",
                "finish-step"
            ]
        );
    }

    #[test]
    fn text_and_thoughts() {
        let (parts, rejected) = run_lines(
            &mut Gemini::new(),
            &[
                r#"{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}]}}]}"#,
                r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}"#,
                r#"{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"x"}]},"finishReason":"STOP"}]}"#,
                r#"{"candidates":[{"content":{"parts":[{"text":123}]}}]}"#,
            ],
        );
        assert_eq!(rejected, 1);
        assert_eq!(
            parts,
            [
                "response-metadata",
                "start-step",
                "reasoning-start",
                "reasoning-delta",
                "reasoning-end",
                "text-start",
                "text-delta",
                "text-end",
                "finish-step"
            ]
        );
    }
}
