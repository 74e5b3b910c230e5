//! A scripted model provider on 127.0.0.1 for the conformance suite: OpenAI Chat Completions
//! (`/v1/chat/completions`, the `@ai-sdk/openai-compatible` provider) and Anthropic Messages
//! (`/v1/messages`), both streaming. The scenario is the word after `SCN:` in the newest user
//! message that has one; every request body is kept, in order, so a test can read what the real
//! client sent.
//!
//! Faults are played once per scenario (the first request of it), so a client that retries gets a
//! healthy answer next: the suite tests what was stored, not OpenCode's back-off.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// One request the client sent.
#[derive(Clone, Debug)]
pub struct Request {
    pub body: Value,
    /// A title-generation request (no tools, the title prompt): not part of the conversation.
    pub is_title: bool,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    counts: std::collections::HashMap<String, u32>,
}

pub struct Mock {
    pub port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Mock {
    pub fn start() -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock provider");
        let port = listener.local_addr().expect("mock address").port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                thread::spawn(move || {
                    let _ = serve(conn, &st);
                });
            }
        });
        Mock { port, state, stop }
    }

    /// How many requests have arrived so far (a mark for `since`).
    pub fn mark(&self) -> usize {
        self.state.lock().map(|s| s.requests.len()).unwrap_or(0)
    }

    /// The conversation requests (titles left out) that arrived after `mark`.
    pub fn since(&self, mark: usize) -> Vec<Request> {
        let s = self.state.lock().expect("mock state");
        s.requests[mark.min(s.requests.len())..]
            .iter()
            .filter(|r| !r.is_title)
            .cloned()
            .collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    let mut out = Out { conn };
    if method == "GET" {
        return out.json(
            200,
            &json!({"object": "list", "data": [{"id": "mock-model"}]}),
        );
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let anthropic = path.trim_end_matches('/').ends_with("/messages");
    let is_title = is_title(&body, anthropic);
    let scn = scenario(&body);
    let count = {
        let mut s = state.lock().expect("mock state");
        s.requests.push(Request {
            body: body.clone(),
            is_title,
        });
        if is_title {
            0
        } else {
            let c = s.counts.entry(scn.clone()).or_insert(0);
            *c += 1;
            *c
        }
    };
    let wire: &dyn Wire = if anthropic { &Anthropic } else { &OpenAi };
    if is_title {
        return wire.reply(&mut out, &[Block::Text("Mock title".into())], false);
    }
    let after_tool = after_tool(&body, anthropic);
    play(wire, &mut out, &scn, count, after_tool)
}

fn is_title(body: &Value, anthropic: bool) -> bool {
    if body.get("tools").is_some_and(|t| !t.is_null()) {
        return false;
    }
    let system = if anthropic {
        body["system"].to_string()
    } else {
        body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter(|m| m["role"] == "system")
                    .map(|m| m["content"].to_string())
                    .collect::<String>()
            })
            .unwrap_or_default()
    };
    system.to_lowercase().contains("title generator")
}

fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn scenario(body: &Value) -> String {
    let empty = Vec::new();
    let msgs = body["messages"].as_array().unwrap_or(&empty);
    for m in msgs.iter().rev().filter(|m| m["role"] == "user") {
        let t = text_of(m);
        if let Some((_, rest)) = t.split_once("SCN:") {
            return rest.split_whitespace().next().unwrap_or("text").to_string();
        }
    }
    "text".into()
}

/// Whether the newest message answers a tool call (the model's turn after a tool ran).
fn after_tool(body: &Value, anthropic: bool) -> bool {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return false;
    };
    if anthropic {
        last["role"] == "user"
            && last["content"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
            && !text_of(last).contains("SCN:")
    } else {
        last["role"] == "tool"
    }
}

/// What a scripted answer is made of.
enum Block {
    Text(String),
    Reasoning(String),
    Tool(String, &'static str, Value),
}

pub struct Out {
    conn: TcpStream,
}

impl Out {
    fn head(&mut self) -> std::io::Result<()> {
        self.conn.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        )
    }
    fn raw(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.conn.write_all(b)?;
        self.conn.flush()
    }
    fn data(&mut self, v: &Value) -> std::io::Result<()> {
        self.raw(format!("data: {v}\n\n").as_bytes())
    }
    fn event(&mut self, name: &str, v: &Value) -> std::io::Result<()> {
        self.raw(format!("event: {name}\ndata: {v}\n\n").as_bytes())
    }
    fn json(&mut self, status: u16, v: &Value) -> std::io::Result<()> {
        let body = v.to_string();
        let reason = if status == 200 { "OK" } else { "Error" };
        self.raw(
            format!(
                "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    }
    /// Drops the connection without finishing the response.
    fn cut(&mut self) {
        let _ = self.conn.shutdown(Shutdown::Both);
    }
}

/// The two wire formats.
trait Wire {
    fn reply(&self, out: &mut Out, blocks: &[Block], tools: bool) -> std::io::Result<()>;
    /// The first events of an answer, then one that cannot be parsed.
    fn start_text(&self, out: &mut Out, text: &str) -> std::io::Result<()>;
    /// One text delta, serialized as the wire's event (for concatenation faults).
    fn text_delta(&self, text: &str) -> String;
    /// An in-band error event.
    fn error_event(&self, out: &mut Out) -> std::io::Result<()>;
    fn finish_text(&self, out: &mut Out) -> std::io::Result<()>;
    fn call_id(&self, scn: &str, n: u32) -> String;
    /// The start of an answer with a tool call whose input stops half-way.
    fn tool_start(&self, id: &str) -> String;
}

struct OpenAi;
struct Anthropic;

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_800_000_000,
           "model": "mock-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

impl Wire for OpenAi {
    fn reply(&self, out: &mut Out, blocks: &[Block], tools: bool) -> std::io::Result<()> {
        out.head()?;
        out.data(&chunk(json!({"role": "assistant", "content": ""}), None))?;
        let mut index = 0;
        for b in blocks {
            match b {
                Block::Text(t) => {
                    for w in t.split_inclusive(' ') {
                        out.data(&chunk(json!({"content": w}), None))?;
                    }
                }
                Block::Reasoning(t) => out.data(&chunk(json!({"reasoning_content": t}), None))?,
                Block::Tool(id, name, args) => {
                    let a = args.to_string();
                    let (x, y) = a.split_at(a.len() / 2);
                    out.data(&chunk(
                        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                "function": {"name": name, "arguments": x}}]}),
                        None,
                    ))?;
                    out.data(&chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": y}}]}),
                        None,
                    ))?;
                    index += 1;
                }
            }
        }
        out.data(&chunk(
            json!({}),
            Some(if tools { "tool_calls" } else { "stop" }),
        ))?;
        out.data(&json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1_800_000_000,
                        "model": "mock-model", "choices": [],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}))?;
        out.raw(b"data: [DONE]\n\n")
    }
    fn start_text(&self, out: &mut Out, text: &str) -> std::io::Result<()> {
        out.head()?;
        out.data(&chunk(json!({"role": "assistant", "content": ""}), None))?;
        out.data(&chunk(json!({"content": text}), None))
    }
    fn text_delta(&self, text: &str) -> String {
        chunk(json!({"content": text}), None).to_string()
    }
    fn error_event(&self, out: &mut Out) -> std::io::Result<()> {
        out.data(&json!({"error": {"message": "Overloaded", "type": "overloaded_error", "code": "overloaded"}}))
    }
    fn finish_text(&self, out: &mut Out) -> std::io::Result<()> {
        out.data(&chunk(json!({}), Some("stop")))?;
        out.raw(b"data: [DONE]\n\n")
    }
    fn call_id(&self, scn: &str, n: u32) -> String {
        format!("call_{scn}_{n}")
    }
    fn tool_start(&self, id: &str) -> String {
        let a = chunk(json!({"role": "assistant", "content": null}), None);
        let b = chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
            None,
        );
        let c = chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\": \"ec"}}]}),
            None,
        );
        format!("data: {a}\n\ndata: {b}\n\ndata: {c}\n\n")
    }
}

impl Wire for Anthropic {
    fn reply(&self, out: &mut Out, blocks: &[Block], tools: bool) -> std::io::Result<()> {
        self.start(out)?;
        for (i, b) in blocks.iter().enumerate() {
            match b {
                Block::Text(t) => {
                    out.event("content_block_start", &json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))?;
                    out.event("content_block_delta", &json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}))?;
                }
                Block::Reasoning(t) => {
                    out.event("content_block_start", &json!({"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": ""}}))?;
                    out.event("content_block_delta", &json!({"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": t}}))?;
                    out.event("content_block_delta", &json!({"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}}))?;
                }
                Block::Tool(id, name, args) => {
                    let a = args.to_string();
                    let (x, y) = a.split_at(a.len() / 2);
                    out.event("content_block_start", &json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}))?;
                    for part in [x, y] {
                        out.event("content_block_delta", &json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": part}}))?;
                    }
                }
            }
            out.event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": i}),
            )?;
        }
        self.end(out, if tools { "tool_use" } else { "end_turn" })
    }
    fn start_text(&self, out: &mut Out, text: &str) -> std::io::Result<()> {
        self.start(out)?;
        out.event("content_block_start", &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))?;
        out.raw(
            format!(
                "event: content_block_delta\ndata: {}\n\n",
                self.text_delta(text)
            )
            .as_bytes(),
        )
    }
    fn text_delta(&self, text: &str) -> String {
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}).to_string()
    }
    fn error_event(&self, out: &mut Out) -> std::io::Result<()> {
        out.event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )
    }
    fn finish_text(&self, out: &mut Out) -> std::io::Result<()> {
        out.event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        )?;
        self.end(out, "end_turn")
    }
    fn call_id(&self, scn: &str, n: u32) -> String {
        format!("toolu_{scn}_{n}")
    }
    fn tool_start(&self, id: &str) -> String {
        let start = json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant",
            "model": "claude-mock", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}});
        let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": "bash", "input": {}}});
        let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"ec"}});
        format!(
            "event: message_start\ndata: {start}\n\nevent: content_block_start\ndata: {block}\n\nevent: content_block_delta\ndata: {delta}\n\n"
        )
    }
}

impl Anthropic {
    fn start(&self, out: &mut Out) -> std::io::Result<()> {
        out.head()?;
        out.event("message_start", &json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant",
            "model": "claude-mock", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}))
    }
    fn end(&self, out: &mut Out, reason: &str) -> std::io::Result<()> {
        out.event("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 5}}))?;
        out.event("message_stop", &json!({"type": "message_stop"}))
    }
}

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "Run a command"})
}

/// Plays scenario `scn`; `count` is how many requests of it arrived so far, this one included.
fn play(
    wire: &dyn Wire,
    out: &mut Out,
    scn: &str,
    count: u32,
    after_tool: bool,
) -> std::io::Result<()> {
    let id = wire.call_id(scn, count);
    let text = |t: &str| vec![Block::Text(t.into())];
    let tool = |name: &'static str, args: Value| vec![Block::Tool(id.clone(), name, args)];
    let first = count == 1;
    // Every tool scenario answers the tool's result with a closing text.
    let tool_scn = [
        "tool",
        "toolerr",
        "parallel",
        "reasoning",
        "texttool",
        "tooltext",
        "sleeptool",
        "drop",
    ];
    if after_tool && tool_scn.contains(&scn) {
        return wire.reply(out, &text("Done after the tool."), false);
    }
    match scn {
        "tool" => wire.reply(out, &tool("bash", bash("echo hi")), true),
        "toolerr" => wire.reply(
            out,
            &tool(
                "read",
                json!({"filePath": "/nonexistent/rewind-conformance-missing.txt"}),
            ),
            true,
        ),
        "parallel" => wire.reply(
            out,
            &[
                Block::Tool(id.clone(), "bash", bash("echo one")),
                Block::Tool(format!("{id}b"), "bash", bash("echo two")),
            ],
            true,
        ),
        "reasoning" => wire.reply(
            out,
            &[
                Block::Reasoning("Let me think about it.".into()),
                Block::Tool(id.clone(), "bash", bash("echo hi")),
            ],
            true,
        ),
        "texttool" => wire.reply(
            out,
            &[
                Block::Text("I will run it. ".into()),
                Block::Tool(id.clone(), "bash", bash("echo hi")),
            ],
            true,
        ),
        "tooltext" => wire.reply(
            out,
            &[
                Block::Tool(id.clone(), "bash", bash("echo hi")),
                Block::Text("Text after the tool call, in the same response.".into()),
            ],
            true,
        ),
        "sleeptool" => wire.reply(out, &tool("bash", bash("sleep 120")), true),
        "retry500" | "retry529" if first => {
            let code = if scn == "retry500" { 500 } else { 529 };
            out.json(
                code,
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": format!("mock {code}")}}),
            )
        }
        "drop" if first => {
            // The connection drops while a tool call's input streams.
            out.head()?;
            out.raw(wire.tool_start(&id).as_bytes())?;
            thread::sleep(Duration::from_millis(200));
            out.cut();
            Ok(())
        }
        "badjson" if first => {
            wire.start_text(out, "Partial ")?;
            out.raw(b"data: {\"id\":\"chatcmpl-mock\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bro\n\n")?;
            wire.finish_text(out)
        }
        "errevent" if first => {
            wire.start_text(out, "Partial ")?;
            wire.error_event(out)
        }
        "concat" if first => {
            wire.start_text(out, "Hello ")?;
            let (a, b) = (wire.text_delta("big "), wire.text_delta("world."));
            out.raw(format!("data: {a}data: {b}\n\n").as_bytes())?;
            wire.finish_text(out)
        }
        "slow" => {
            wire.start_text(out, "Slowly ")?;
            for i in 0..40 {
                thread::sleep(Duration::from_millis(250));
                out.raw(format!("data: {}\n\n", wire.text_delta(&format!("w{i} "))).as_bytes())?;
            }
            wire.finish_text(out)
        }
        _ => wire.reply(out, &text("Hello from the mock model."), false),
    }
}
