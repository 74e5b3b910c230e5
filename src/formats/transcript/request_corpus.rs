//! The rebuilt requests against what the real clients sent next (`requests.jsonl` of the
//! transcripts corpus): roles, block order and ids. Instructions, system reminders and
//! attachments are not rebuilt: system/developer messages are left out of both sides, and a run
//! of text blocks counts as one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::request::{Block, BlockKind, Role};
use crate::source::FileId;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What is compared of a message: its role, its blocks (kind and id), and its stored id
/// when both sides have one.
#[derive(Debug, Clone)]
struct Shape {
    role: String,
    blocks: Vec<String>,
    id: Option<String>,
}

impl PartialEq for Shape {
    fn eq(&self, o: &Self) -> bool {
        self.role == o.role
            && self.blocks == o.blocks
            && match (&self.id, &o.id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

fn dir(rel: &str) -> PathBuf {
    // Recordings of the project's own (`tests/fixtures/transcripts/`), else the corpus's.
    let own = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts")
        .join(rel.replace("claude-code/", "claude-"));
    if rel.starts_with("claude-code/thinking/") && own.exists() {
        return own;
    }
    let root = match std::env::var_os("REWIND_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    root.join("transcripts").join(rel)
}

fn transcript_of(d: &Path) -> PathBuf {
    std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            n.ends_with(".jsonl") && n != "requests.jsonl" && !n.starts_with("agent-")
        })
        .unwrap()
}

fn push_block(blocks: &mut Vec<String>, b: String) {
    if b == "text" && blocks.last().map(String::as_str) == Some("text") {
        return;
    }
    blocks.push(b);
}

fn kind(b: &Block) -> String {
    match &b.kind {
        BlockKind::Text => "text".into(),
        BlockKind::Reasoning => "reasoning".into(),
        BlockKind::ToolCall { id, .. } => format!("call {id}"),
        BlockKind::ToolResult { id, .. } => format!("result {id}"),
        BlockKind::Other(t) => t.clone(),
    }
}

/// The rebuilt request, and whether each message is an assistant's.
fn rebuilt(client: &str, scenario: &str) -> Vec<Shape> {
    rebuilt_in(client, &dir(&format!("{client}/{scenario}")))
}

/// The request rebuilt from the transcript in folder `d`.
fn rebuilt_in(client: &str, d: &Path) -> Vec<Shape> {
    let path = transcript_of(d);
    let file = std::fs::File::open(&path).unwrap();
    let reader = std::io::BufReader::new(file);
    let req = if client == "codex" {
        let analysis = crate::formats::codex::replay::replay(reader, FileId(0)).unwrap();
        crate::formats::codex::request::next_request(&analysis).unwrap()
    } else {
        let analysis = crate::formats::claude_code::replay::replay(reader, FileId(0)).unwrap();
        crate::formats::claude_code::request::next_request(&analysis).unwrap()
    };
    req.messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            let mut blocks = Vec::new();
            for b in &m.content {
                push_block(&mut blocks, kind(b));
            }
            let role = match (client, m.role) {
                ("codex", Role::Tool) => "tool",
                (_, Role::Assistant) => "assistant",
                _ => "user",
            };
            let id = (client == "codex").then(|| m.message_id.clone()).flatten();
            Shape {
                role: role.into(),
                blocks,
                id,
            }
        })
        .collect()
}

/// The messages of each request the client sent.
fn sent(client: &str, scenario: &str) -> Vec<Vec<Shape>> {
    sent_in(client, &dir(&format!("{client}/{scenario}")))
}

/// The messages of each request the client sent, recorded in folder `d`.
fn sent_in(client: &str, d: &Path) -> Vec<Vec<Shape>> {
    let text = std::fs::read_to_string(d.join("requests.jsonl")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            if client == "codex" {
                codex_items(&v["body"]["input"])
            } else {
                claude_messages(&v["body"]["messages"])
            }
        })
        .collect()
}

fn claude_messages(v: &Value) -> Vec<Shape> {
    let mut out: Vec<Shape> = Vec::new();
    for m in v.as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default();
        if role == "system" {
            continue;
        }
        let mut blocks = Vec::new();
        match &m["content"] {
            Value::String(_) => push_block(&mut blocks, "text".into()),
            Value::Array(items) => {
                for b in items {
                    let k = match b["type"].as_str().unwrap_or_default() {
                        "text" => "text".to_owned(),
                        "thinking" | "redacted_thinking" => "reasoning".to_owned(),
                        "tool_use" => format!("call {}", b["id"].as_str().unwrap_or_default()),
                        "tool_result" => {
                            format!("result {}", b["tool_use_id"].as_str().unwrap_or_default())
                        }
                        other => other.to_owned(),
                    };
                    push_block(&mut blocks, k);
                }
            }
            _ => {}
        }
        out.push(Shape {
            role: role.into(),
            blocks,
            id: None,
        });
    }
    out
}

fn codex_items(v: &Value) -> Vec<Shape> {
    let mut out = Vec::new();
    for it in v.as_array().into_iter().flatten() {
        let call = it["call_id"].as_str().unwrap_or_default();
        let (role, block) = match (it["type"].as_str().unwrap_or_default(), it["role"].as_str()) {
            ("message", Some("developer" | "system")) => continue,
            ("message", Some("assistant")) => ("assistant", "text".to_owned()),
            ("message", _) => ("user", "text".to_owned()),
            ("reasoning", _) => ("assistant", "reasoning".to_owned()),
            ("function_call" | "custom_tool_call" | "local_shell_call", _) => {
                ("assistant", format!("call {call}"))
            }
            (t, _) if t.ends_with("_output") => ("tool", format!("result {call}")),
            (t, _) => ("assistant", t.to_owned()),
        };
        out.push(Shape {
            role: role.into(),
            blocks: vec![block],
            id: it["id"].as_str().map(str::to_owned),
        });
    }
    out
}

/// The history minus the reply that ends it: what the last request held.
fn without_reply(mut shapes: Vec<Shape>) -> Vec<Shape> {
    while shapes.last().is_some_and(|s| s.role == "assistant") {
        shapes.pop();
    }
    shapes
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn the_last_request_is_the_history_without_its_reply() {
    for (client, scenario) in [
        ("claude-code", "healthy"),
        ("claude-code", "tool"),
        ("claude-code", "toolfail"),
        ("claude-code", "subagent"),
        ("claude-code", "stream_error"),
        ("claude-code", "stream_error_fatal"),
        ("claude-code", "kill_tool"),
        ("claude-code", "kill_stream"),
        ("claude-code", "resume_after_kill_tool"),
        ("codex", "healthy"),
        ("codex", "tool"),
        ("codex", "toolfail"),
        ("codex", "stream_error"),
        ("codex", "stream_error_after_block"),
        ("codex", "kill_stream"),
        ("codex", "resume_after_kill_stream"),
    ] {
        let sent = sent(client, scenario);
        let last = sent.last().unwrap();
        let ours = without_reply(rebuilt(client, scenario));
        assert!(!ours.is_empty(), "{client}/{scenario}");
        assert_eq!(&ours, last, "{client}/{scenario}");
    }
    // Not vacuous: the tool scenarios carry the call and its result, with their ids.
    let blocks = |client, scenario| -> Vec<String> {
        rebuilt(client, scenario)
            .into_iter()
            .flat_map(|s| s.blocks)
            .collect()
    };
    for client in ["claude-code", "codex"] {
        let b = blocks(client, "tool");
        let call = if client == "codex" {
            "call_mock_001"
        } else {
            "toolu_mock_001"
        };
        assert!(b.contains(&format!("call {call}")), "{b:?}");
        assert!(b.contains(&format!("result {call}")), "{b:?}");
    }
    // The orphan is dropped from Claude Code's request, and the ids of Codex's items match.
    assert!(
        !blocks("claude-code", "kill_tool")
            .iter()
            .any(|b| b.starts_with("call"))
    );
    assert!(rebuilt("codex", "tool").iter().all(|s| s.id.is_some()));
}

/// The project's own recordings with extended thinking
/// (`tests/fixtures/transcripts/claude-thinking/`): thinking blocks are rebuilt where the
/// client sends them, and the killed session is rebuilt as the client resumed it, its
/// unanswered call left out and its thinking kept (the request Anthropic refuses).
#[test]
fn thinking_sessions_are_rebuilt_as_the_client_sent_them() {
    let sent_tool = sent("claude-code", "thinking/tool");
    let ours = without_reply(rebuilt("claude-code", "thinking/tool"));
    assert_eq!(&ours, sent_tool.last().unwrap());
    assert!(
        ours.iter()
            .any(|s| s.blocks.first().map(String::as_str) == Some("reasoning"))
    );
    let mut ours = rebuilt("claude-code", "thinking/kill_tool");
    ours.push(Shape {
        role: "user".into(),
        blocks: vec!["text".into()],
        id: None,
    });
    let first = sent("claude-code", "thinking/resume_after_kill_tool").remove(0);
    assert_eq!(ours, first);
    let assistant = &first[first.len() - 2];
    assert_eq!(assistant.blocks, ["reasoning", "text"]);
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn the_resumed_request_is_the_killed_history_plus_the_new_prompt() {
    let prompt = || Shape {
        role: "user".into(),
        blocks: vec!["text".into()],
        id: None,
    };
    for (client, killed, resumed) in [
        ("claude-code", "kill_tool", "resume_after_kill_tool"),
        ("codex", "kill_stream", "resume_after_kill_stream"),
    ] {
        let mut ours = rebuilt(client, killed);
        ours.push(prompt());
        let first = sent(client, resumed).remove(0);
        assert_eq!(ours, first, "{client}/{killed} → {resumed}");
    }
    // Codex answers the unanswered call with a synthetic output right after it.
    let ours = rebuilt("codex", "kill_tool");
    let last = ours.last().unwrap();
    assert_eq!(
        (last.role.as_str(), last.blocks.as_slice()),
        ("tool", ["result call_mock_001".to_owned()].as_slice())
    );
}

/// The version matrix (`tests/fixtures/matrix/`, recorded from each real client version):
/// after a finished turn, the request rebuilt from the transcript is the last one the version
/// sent without its reply; after a kill, it is what the version sent first on resume, without
/// the new prompt. A scenario whose transcript is not the main conversation's is named with its
/// reason.
#[test]
fn the_matrix_requests_are_rebuilt_as_each_version_sent_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/matrix");
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut excused_seen = Vec::new();
    for client in ["claude-code", "codex"] {
        let mut versions: Vec<PathBuf> = std::fs::read_dir(root.join(client))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        versions.sort();
        for version in versions {
            let v = version.file_name().unwrap().to_string_lossy().into_owned();
            for scenario in ["healthy", "healthy_rerun", "tool", "toolfail"] {
                let d = version.join(scenario);
                if !d.join("requests.jsonl").exists() {
                    continue;
                }
                let main = main_requests_in(client, &d);
                let ours = without_reply(rebuilt_in(client, &d));
                checked += 1;
                if main.last() != Some(&ours) {
                    wrong.push(format!(
                        "{client} {v} {scenario}:\n  sent  {:?}\n  ours  {:?}",
                        main.last(),
                        ours
                    ));
                }
            }
            for (killed, resumed) in [
                ("kill_tool", "resume_after_kill_tool"),
                ("kill_stream", "resume_after_kill_stream"),
            ] {
                let (k, r) = (version.join(killed), version.join(resumed));
                if !r.join("requests.jsonl").exists() || transcript_exists(&k).is_none() {
                    continue;
                }
                let mut ours = rebuilt_in(client, &k);
                ours.push(Shape {
                    role: "user".into(),
                    blocks: vec!["text".into()],
                    id: None,
                });
                let first = main_requests_in(client, &r);
                checked += 1;
                let excused = NOT_REBUILT
                    .iter()
                    .any(|(c, ver, _)| *c == client && *ver == v);
                if first.first() != Some(&ours) && excused {
                    excused_seen.push(format!("{client} {v}"));
                } else if first.first() != Some(&ours) {
                    wrong.push(format!(
                        "{client} {v} {killed} → {resumed}:\n  sent  {:?}\n  ours  {:?}",
                        first.first(),
                        ours
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked >= 30, "{checked}");
    // Each excuse is still needed: the version still sends what the rebuild leaves out.
    for (client, version, _) in NOT_REBUILT {
        let name = format!("{client} {version}");
        assert!(excused_seen.contains(&name), "{name} is rebuilt now");
    }
}

/// The main conversation's requests: without the side requests a version makes, a title
/// request (no tools) or a Warmup agent's (its one prompt is `Warmup`).
fn main_requests_in(client: &str, d: &Path) -> Vec<Vec<Shape>> {
    let text = std::fs::read_to_string(d.join("requests.jsonl")).unwrap();
    let main: Vec<bool> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let body = &v["body"];
            if client == "codex" {
                return true;
            }
            let first = &body["messages"][0]["content"];
            let warmup =
                first.as_str() == Some("Warmup") || first[0]["text"].as_str() == Some("Warmup");
            !body["tools"].is_null() && !warmup
        })
        .collect();
    sent_in(client, d)
        .into_iter()
        .zip(main)
        .filter_map(|(s, m)| m.then_some(s))
        .collect()
}

/// Where a version sends more than its stored history, and why rewind leaves it out.
const NOT_REBUILT: &[(&str, &str, &str)] = &[(
    "codex",
    "0.100.0",
    "on resume 0.100 sends its context messages (permissions, AGENTS.md, environment) again after \
     the history; they are instructions, which the rebuilt request leaves out",
)];

fn transcript_exists(d: &Path) -> Option<PathBuf> {
    std::fs::read_dir(d)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            n.ends_with(".jsonl") && n != "requests.jsonl" && !n.starts_with("agent-")
        })
}
