//! `rewind repair` on Claude Code transcripts and Codex rollouts, checked by the real clients:
//! the corpus's killed-mid-tool sessions, a torn-last-line copy of its healthy sessions and a
//! copy of its tool sessions without the call (an orphan result) are
//! copied into a scratch HOME (the corpus is never written), repaired (or not), and resumed by
//! the real client (npm `@anthropic-ai/claude-code` and `@openai/codex`, pinned below) against
//! the corpus's scripted provider (`transcripts/tools/mock.py`, on 127.0.0.1). The request the
//! client sends on resume must be well formed (every call answered right after it, ids unique),
//! and what the client does with the unrepaired file is asserted too, so the difference shows.
//!
//! `#[ignore]`d in `cargo test` (it installs the clients from npm once and runs them); run by
//! `bash scripts/transcript-roundtrip.sh`, which `scripts/conformance.sh` calls. Without node,
//! npm, python3 or the corpus it says it is skipped. Cases stay in `target/transcript-roundtrip/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The client releases the corpus was recorded with.
const CLAUDE_CODE_VERSION: &str = "2.1.197";
const CODEX_VERSION: &str = "0.169.0";
/// Ports the scripted provider may listen on.
const PORTS: std::ops::RangeInclusive<u16> = 18095..=18099;
const RESUMED: &str = "Resumed: I see the earlier conversation.";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    Claude,
    Codex,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    /// The corpus's `kill_tool`: killed while the tool ran (an unanswered call at the end).
    KillTool,
    /// The corpus's `healthy` session with its last line cut in half.
    Torn,
    /// The corpus's `tool` session without its call: the result is an orphan (what a
    /// compaction that drops the call but keeps the result leaves).
    Orphan,
    /// The project's own recording of a Claude Code session with extended thinking killed while
    /// the tool ran (`tests/fixtures/transcripts/claude-thinking/kill_tool`), resumed against
    /// `scripts/thinking-mock.py`, which refuses a latest assistant message whose signed thinking
    /// no longer matches the response, as Anthropic does.
    ThinkingKillTool,
    /// The project's healthy thinking session (`claude-thinking/tool`) with the text of its
    /// last thinking block emptied, its signature kept (what anthropics/claude-code#63269
    /// reports Claude Code 2.1.150 writing).
    ThinkingBlank,
}

fn tool_ok(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs the pinned clients into `target/clients`; the folder with their binaries.
fn install(root: &Path) -> Result<PathBuf, String> {
    for tool in ["node", "npm", "python3"] {
        if !tool_ok(tool, "--version") {
            return Err(format!("{tool} is not installed"));
        }
    }
    let bin = root.join("node_modules/.bin");
    let version = |name: &str| {
        Command::new(bin.join(name))
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let current = || {
        version("claude").starts_with(CLAUDE_CODE_VERSION)
            && version("codex").contains(CODEX_VERSION)
    };
    if !current() {
        std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
        if !root.join("package.json").exists() {
            std::fs::write(
                root.join("package.json"),
                "{\"name\":\"clients\",\"private\":true}\n",
            )
            .map_err(|e| e.to_string())?;
        }
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .arg(format!("@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"))
            .arg(format!("@openai/codex@{CODEX_VERSION}"))
            .current_dir(root)
            .output()
            .map_err(|e| format!("npm: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "npm install failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .chars()
                    .take(400)
                    .collect::<String>()
            ));
        }
        // npm may skip Claude Code's postinstall (which puts the native binary in place).
        if !version("claude").starts_with(CLAUDE_CODE_VERSION) {
            let _ = Command::new("node")
                .arg("install.cjs")
                .current_dir(root.join("node_modules/@anthropic-ai/claude-code"))
                .output();
        }
        if !current() {
            return Err(format!(
                "the clients do not run after npm install (claude: {:?}, codex: {:?})",
                version("claude").trim(),
                version("codex").trim()
            ));
        }
    }
    Ok(bin)
}

/// The scripted provider, stopped when dropped.
struct Mock {
    child: Child,
    port: u16,
}

impl Mock {
    /// `mock.py` from `tools` answering `resume`; with `thinking`, `scripts/thinking-mock.py`
    /// around it, answering `thinking_resume`.
    fn start(tools: &Path, out: &Path, thinking: bool) -> Mock {
        let port = PORTS
            .clone()
            .find(|p| TcpListener::bind(("127.0.0.1", *p)).is_ok())
            .expect("a free port in 18095-18099");
        let (script, scenario) = if thinking {
            (
                Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/thinking-mock.py"),
                "thinking_resume",
            )
        } else {
            (tools.join("mock.py"), "resume")
        };
        let child = Command::new("python3")
            .arg(script)
            .env("MOCK", tools.join("mock.py"))
            .args([
                "--port",
                &port.to_string(),
                "--scenario",
                scenario,
                "--outdir",
            ])
            .arg(out)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(out.join("mock.stderr")).unwrap())
            .spawn()
            .expect("start mock.py");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mock.py did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Mock { child, port }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` for at most two minutes; its exit status (None when it had to be killed).
fn run(mut cmd: Command, out: &Path) -> Option<i32> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out.join("client.stdout")).unwrap())
        .stderr(std::fs::File::create(out.join("client.stderr")).unwrap())
        .spawn()
        .expect("start the client");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The one transcript file of a corpus case.
fn transcript_of(case: &Path) -> PathBuf {
    std::fs::read_dir(case)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && p.file_name().is_some_and(|n| n != "requests.jsonl")
        })
        .expect("a transcript in the case folder")
}

/// The file's lines that are not JSON (1-based).
fn bad_lines(path: &Path) -> Vec<usize> {
    std::fs::read(path)
        .unwrap()
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && serde_json::from_slice::<Value>(l).is_err())
        .map(|(i, _)| i + 1)
        .collect()
}

/// The transcript without its first call: Claude Code's `tool_use` record (its children are
/// linked to its parent), Codex's `function_call` line.
fn with_last_thinking_blank(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.contains("\"type\":\"thinking\""))
        .unwrap();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i == last {
            let mut r: Value = serde_json::from_str(line).unwrap();
            r["message"]["content"][0]["thinking"] = "".into();
            out.push_str(&serde_json::to_string(&r).unwrap());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.into_bytes()
}

fn without_the_call(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let is_call = |r: &Value| {
        r["payload"]["type"] == "function_call"
            || (r["type"] == "assistant"
                && r["message"]["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_use")))
    };
    let call = records.iter().find(|r| is_call(r)).unwrap().clone();
    let mut out = String::new();
    let mut after = false;
    for (line, r) in text.lines().zip(&records) {
        if *r == call {
            after = true;
            continue;
        }
        if after && let Some(n) = r["ordinal"].as_u64() {
            // Codex numbers its lines 0, 1, 2, …: a rollout without the call has no gap.
            let mut r = r.clone();
            r["ordinal"] = (n - 1).into();
            out.push_str(&serde_json::to_string(&r).unwrap());
        } else if call["uuid"].is_string() && r["parentUuid"] == call["uuid"] {
            let mut r = r.clone();
            r["parentUuid"] = call["parentUuid"].clone();
            out.push_str(&serde_json::to_string(&r).unwrap());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// The bodies of the main-loop requests (those that carry tools) the mock received.
fn main_requests(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["body"].clone())
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

fn blocks(m: &Value) -> Vec<Value> {
    m["content"].as_array().cloned().unwrap_or_default()
}

fn ids_of(m: &Value, ty: &str, key: &str) -> Vec<String> {
    blocks(m)
        .iter()
        .filter(|b| b["type"] == ty)
        .filter_map(|b| b[key].as_str().map(str::to_owned))
        .collect()
}

/// Anthropic Messages: every `tool_use` is answered in the next message, ids are unique, and
/// every `tool_result` answers the message before it.
fn check_anthropic(body: &Value) -> Result<(), String> {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let uses = ids_of(m, "tool_use", "id");
        for id in &uses {
            if !seen.insert(id.clone()) {
                return Err(format!("tool_use id {id} appears twice"));
            }
            let next = msgs.get(i + 1);
            let answered = next.is_some_and(|n| {
                n["role"] == "user" && ids_of(n, "tool_result", "tool_use_id").contains(id)
            });
            if !answered {
                return Err(format!(
                    "messages.{i}: tool_use {id} has no tool_result right after it"
                ));
            }
        }
        let prev_uses = i
            .checked_sub(1)
            .map(|p| ids_of(&msgs[p], "tool_use", "id"))
            .unwrap_or_default();
        for id in ids_of(m, "tool_result", "tool_use_id") {
            if !prev_uses.contains(&id) {
                return Err(format!(
                    "messages.{i}: tool_result for unknown tool_use {id}"
                ));
            }
        }
    }
    Ok(())
}

/// OpenAI Responses: every call has an output after it, ids are unique, every output has a call.
fn check_responses(body: &Value) -> Result<(), String> {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let mut calls = std::collections::HashSet::new();
    for (i, item) in input.iter().enumerate() {
        let ty = item["type"].as_str().unwrap_or_default();
        let id = item["call_id"].as_str().unwrap_or_default().to_owned();
        if ty.ends_with("_call") {
            if !calls.insert(id.clone()) {
                return Err(format!("call_id {id} appears twice"));
            }
            let answered = input[i + 1..].iter().any(|o| {
                o["call_id"] == id.as_str()
                    && o["type"].as_str().is_some_and(|t| t.ends_with("_output"))
            });
            if !answered {
                return Err(format!("input.{i}: {ty} {id} has no output"));
            }
        } else if ty.ends_with("_call_output") && !calls.contains(&id) {
            return Err(format!("input.{i}: output for unknown call {id}"));
        }
    }
    Ok(())
}

struct Case {
    client: Client,
    scenario: Scenario,
    repaired: bool,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{}-{}-{}",
            match self.client {
                Client::Claude => "claude",
                Client::Codex => "codex",
            },
            match self.scenario {
                Scenario::KillTool => "kill_tool",
                Scenario::Torn => "torn",
                Scenario::Orphan => "orphan",
                Scenario::ThinkingKillTool => "thinking_kill_tool",
                Scenario::ThinkingBlank => "thinking_blank",
            },
            if self.repaired { "repaired" } else { "as-is" }
        )
    }
}

/// Runs one case; what it observed, or why it failed.
fn run_case(case: &Case, bin: &Path, corpus: &Path, root: &Path) -> Result<String, String> {
    let dir = root.join(case.name());
    let _ = std::fs::remove_dir_all(&dir);
    let (home, work, out) = (dir.join("home"), dir.join("work"), dir.join("out"));
    for d in [&home, &work, &out] {
        std::fs::create_dir_all(d).unwrap();
    }
    let client_dir = corpus.join(match case.client {
        Client::Claude => "claude-code",
        Client::Codex => "codex",
    });
    let source = transcript_of(&match case.scenario {
        Scenario::KillTool => client_dir.join("kill_tool"),
        Scenario::Torn => client_dir.join("healthy"),
        Scenario::Orphan => client_dir.join("tool"),
        Scenario::ThinkingKillTool => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/transcripts/claude-thinking/kill_tool"),
        Scenario::ThinkingBlank => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/transcripts/claude-thinking/tool"),
    });
    let name = source.file_name().unwrap().to_owned();
    let folder = match case.client {
        Client::Claude => {
            // Claude Code keeps a project's sessions under its folder's path, `/` → `-`.
            let project: String = work
                .to_string_lossy()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            home.join(".claude/projects").join(project)
        }
        Client::Codex => home.join(".codex/sessions/2026/11/23"),
    };
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join(&name);
    let mut bytes = std::fs::read(&source).unwrap();
    if case.scenario == Scenario::Torn {
        // Cut the last line in half: what a kill mid-append leaves.
        assert_eq!(bytes.pop(), Some(b'\n'));
        let start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(start + (bytes.len() - start) / 2);
    }
    if case.scenario == Scenario::Orphan {
        bytes = without_the_call(&bytes);
    }
    if case.scenario == Scenario::ThinkingBlank {
        bytes = with_last_thinking_blank(&bytes);
    }
    std::fs::write(&file, &bytes).unwrap();
    // As a session left by a client some time ago (rewind refuses a file written seconds ago).
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
        .unwrap();
    let session = match case.client {
        Client::Claude => name.to_string_lossy().trim_end_matches(".jsonl").to_owned(),
        Client::Codex => {
            let n = name.to_string_lossy();
            let stem = n.trim_end_matches(".jsonl");
            stem[stem.len() - 36..].to_owned()
        }
    };

    let thinking = matches!(
        case.scenario,
        Scenario::ThinkingKillTool | Scenario::ThinkingBlank
    );
    let mut notes = Vec::new();
    if case.repaired {
        let rewind = env!("CARGO_BIN_EXE_rewind");
        let dry = Command::new(rewind)
            .args(["repair", "--dry-run"])
            .arg(&file)
            .output()
            .unwrap();
        if !dry.status.success() || std::fs::read(&file).unwrap() != bytes {
            return Err("the dry run failed or wrote".into());
        }
        let first = Command::new(rewind)
            .arg("repair")
            // The recording's last call is minutes old, not hours: no client runs it.
            .args(thinking.then_some("--force"))
            .arg(&file)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&first.stdout).into_owned();
        if !first.status.success() || !said.contains("applied ") {
            return Err(format!(
                "rewind repair: {said}{}",
                String::from_utf8_lossy(&first.stderr)
            ));
        }
        let backup = std::fs::read_dir(&folder)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains(".rewind-backup-"))
            .ok_or("no backup next to the file")?;
        if std::fs::read(&backup).unwrap() != bytes {
            return Err("the backup differs from the original".into());
        }
        // Asked as JSON: the human line wraps at the terminal's width, a long path with it.
        let again = Command::new(rewind)
            .args(["repair", "--format", "json"])
            .arg(&file)
            .output()
            .unwrap();
        let plan = serde_json::from_slice::<Value>(&again.stdout)
            .ok()
            .and_then(|doc| doc["plan"].as_array().map(Vec::len));
        if plan != Some(0) {
            return Err("a second repair wanted to change the file again".into());
        }
        notes.push(
            "repaired (backup equal to the original; a second run: nothing to repair)".to_owned(),
        );
    }
    let before_resume = std::fs::read(&file).unwrap();
    let (_, doc) = common::diagnose_json(&file, &[]);
    let predicted = !common::of_rule(&common::findings(&doc), "thinking-modified").is_empty();

    let tools = corpus.join("tools");
    let mock = Mock::start(&tools, &out, thinking);
    let code = match case.client {
        Client::Claude => {
            let mut cmd = Command::new(bin.join("claude"));
            cmd.args([
                "--resume",
                &session,
                "-p",
                "Continue please",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .current_dir(&work)
            .env("HOME", &home)
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", mock.port),
            )
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1");
            run(cmd, &out)
        }
        Client::Codex => {
            std::fs::write(
                home.join(".codex/config.toml"),
                format!(
                    "model = \"mock-model\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\nrequest_max_retries = 1\nstream_max_retries = 1\n",
                    mock.port
                ),
            )
            .unwrap();
            let mut cmd = Command::new(bin.join("codex"));
            cmd.args([
                "exec",
                "resume",
                "--json",
                "--skip-git-repo-check",
                &session,
                "Continue please",
            ])
            .current_dir(&work)
            .env("HOME", &home)
            .env("MOCK_API_KEY", "dummy")
            .env("RUST_LOG", "warn");
            run(cmd, &out)
        }
    };
    drop(mock);
    let stdout = std::fs::read_to_string(out.join("client.stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(out.join("client.stderr")).unwrap_or_default();
    if code != Some(0) || !stdout.contains(RESUMED) {
        return Err(format!(
            "the client did not resume (exit {code:?}): {}",
            stderr.chars().take(300).collect::<String>()
        ));
    }
    let requests = main_requests(&out);
    let last = requests.last().ok_or("the client sent no request")?;
    let refused = std::fs::read_to_string(out.join("mock.stderr"))
        .unwrap_or_default()
        .contains("\" 400 ");
    match case.client {
        Client::Claude => check_anthropic(last)?,
        Client::Codex => check_responses(last)?,
    }
    let (n, what) = match case.client {
        Client::Claude => (last["messages"].as_array().map_or(0, Vec::len), "messages"),
        Client::Codex => (last["input"].as_array().map_or(0, Vec::len), "input items"),
    };
    notes.push(format!("resumed; its request ({n} {what}) is well formed"));
    if case.repaired {
        // What the client wrote on resume keeps the file clean of what was repaired.
        let (_, doc) = common::diagnose_json(&file, &[]);
        let findings = common::findings(&doc);
        for rule in ["tool-never-finished", "undecodable-record"] {
            if !common::of_rule(&findings, rule).is_empty() {
                return Err(format!("after the resume rewind reports {rule}"));
            }
        }
    }

    // What differs between the repaired and the unrepaired file.
    let sent = serde_json::to_string(last).unwrap();
    let bad = bad_lines(&file);
    match (case.client, case.scenario, case.repaired) {
        (Client::Claude, Scenario::KillTool, false) => {
            if sent.contains("toolu_mock_001") {
                return Err("Claude Code sent the unanswered call".into());
            }
            notes.push("Claude Code left the unanswered tool_use out of its request (it stays on disk as a dead-end branch)".into());
        }
        (Client::Claude, Scenario::KillTool, true) => {
            if !sent.contains("[Request interrupted by user for tool use]") {
                return Err("the repaired tool_result is not in the request".into());
            }
            notes.push(
                "Claude Code sent the call with rewind's error tool_result right after it".into(),
            );
        }
        (Client::Codex, Scenario::KillTool, repaired) => {
            if !sent.contains("\"output\":\"aborted\"") {
                return Err("no \"aborted\" output for the call in the request".into());
            }
            let outputs = String::from_utf8_lossy(&before_resume)
                .matches("\"type\":\"function_call_output\"")
                .count();
            if outputs != usize::from(repaired) {
                return Err(format!("outputs on disk before the resume: {outputs}"));
            }
            notes.push(if repaired {
                "Codex sent rewind's \"aborted\" output, which is now in the rollout".into()
            } else {
                "Codex made up an \"aborted\" output in its request only; the rollout still has none".into()
            });
        }
        (Client::Claude, Scenario::Torn, repaired) => {
            if repaired != bad.is_empty() {
                return Err(format!("lines that are not JSON after the resume: {bad:?}"));
            }
            notes.push(if repaired {
                "after the resume every line of the transcript is JSON".into()
            } else {
                format!("Claude Code appended its next record onto the torn line: line {bad:?} is now not JSON, in the middle of the file")
            });
        }
        (Client::Codex, Scenario::Torn, repaired) => {
            let warned = stderr.contains("failed to parse line as JSON");
            if repaired == warned || repaired != bad.is_empty() {
                return Err(format!(
                    "warned: {warned}, lines that are not JSON: {bad:?}"
                ));
            }
            notes.push(if repaired {
                "Codex read the rollout without a warning; every line is JSON".into()
            } else {
                format!("Codex warned \"failed to parse line as JSON\" and skipped line {bad:?}, which stays in the rollout")
            });
        }
        (Client::Claude, Scenario::Orphan, repaired) => {
            let placeholder = last["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "user" && m["content"] == "(no content)");
            if repaired == placeholder || sent.contains("tool_result") {
                return Err(format!("placeholder user turn: {placeholder}"));
            }
            notes.push(if repaired {
                "the request has no trace of the orphan".into()
            } else {
                "Claude Code left the orphan tool_result out of its request, with a user turn \"(no content)\" in its place".into()
            });
        }
        (Client::Claude, Scenario::ThinkingKillTool, repaired) => {
            // The response the client was killed in: its signed thinking, in the first request.
            let first = requests.first().ok_or("the client sent no request")?;
            let messages = first["messages"].as_array().cloned().unwrap_or_default();
            let at = messages
                .iter()
                .position(|m| {
                    m["role"] == "assistant" && blocks(m).iter().any(|b| b["type"] == "thinking")
                })
                .ok_or("the first request has no thinking")?;
            let called = !ids_of(&messages[at], "tool_use", "id").is_empty();
            let answered = messages
                .get(at + 1)
                .and_then(|m| blocks(m).first().cloned())
                .is_some_and(|b| b["type"] == "tool_result");
            if predicted == repaired || refused == repaired || called != repaired {
                return Err(format!(
                    "rewind predicted a refusal: {predicted}; the provider refused: {refused}; the response's call was sent: {called}"
                ));
            }
            if repaired && !answered {
                return Err("the repaired call is not answered right after it".into());
            }
            if !repaired
                && blocks(&last["messages"][at])
                    .iter()
                    .any(|b| b["type"] == "thinking")
            {
                return Err("after the refusal the client sent the thinking again".into());
            }
            notes.push(if repaired {
                "the response was sent whole, its thinking signed, its call answered by rewind's result; no request refused".into()
            } else {
                "as rewind predicted, Claude Code sent the thinking without the unanswered call, was refused (400 \"thinking … cannot be modified\"), and retried without the thinking blocks".into()
            });
        }
        (Client::Claude, Scenario::ThinkingBlank, repaired) => {
            let thinking_sent = |body: &Value| {
                body["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(blocks)
                    .filter(|b| b["type"] == "thinking")
                    .count()
            };
            if predicted == repaired || refused == repaired {
                return Err(format!(
                    "rewind predicted a refusal: {predicted}; the provider refused: {refused}"
                ));
            }
            // Repaired: the other response's thinking is still sent; as it is, the client's
            // retry sends none.
            if (thinking_sent(last) > 0) != repaired {
                return Err(format!(
                    "thinking blocks in the last request: {}",
                    thinking_sent(last)
                ));
            }
            notes.push(if repaired {
                "rewind removed the emptied thinking block; the request was accepted at once, the session's other thinking still sent".into()
            } else {
                "as rewind predicted, the emptied thinking was refused (400); Claude Code retried without any thinking block".into()
            });
        }
        (Client::Codex, Scenario::ThinkingKillTool | Scenario::ThinkingBlank, _) => {
            unreachable!("a Claude Code case")
        }
        (Client::Codex, Scenario::Orphan, repaired) => {
            let complained = stderr.contains("Orphan function call output");
            if repaired == complained || sent.contains("function_call_output") {
                return Err(format!("Codex logged an orphan output: {complained}"));
            }
            if stderr.contains("skipping missing rollout ordinal range") {
                return Err("Codex found a gap in the rollout's ordinals".into());
            }
            notes.push(if repaired {
                "the request has no trace of the orphan, and Codex logs no error (the ordinals after the dropped line were renumbered: no gap)".into()
            } else {
                "Codex logged ERROR \"Orphan function call output\" and left it out of its request"
                    .into()
            });
        }
    }
    Ok(notes.join("; "))
}

#[test]
#[ignore = "drives the real Claude Code and Codex from npm: run `bash scripts/transcript-roundtrip.sh`"]
fn real_clients_resume_repaired_transcripts() {
    let start = Instant::now();
    let transcripts = common::corpus().join("transcripts");
    if !transcripts.join("tools/mock.py").is_file() {
        println!(
            "transcript round trip: SKIPPED, no corpus at {} (REWIND_CORPUS)",
            transcripts.display()
        );
        return;
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let bin = match install(&target.join("clients")) {
        Ok(b) => b,
        Err(why) => {
            println!("transcript round trip: SKIPPED, {why}: it needs node, npm and python3");
            return;
        }
    };
    println!(
        "transcript round trip: rewind repair, then resume with the real Claude Code {CLAUDE_CODE_VERSION} and Codex {CODEX_VERSION} (mock provider on 127.0.0.1:{}..{})",
        PORTS.start(),
        PORTS.end()
    );
    let root = target.join("transcript-roundtrip");
    let mut failed = Vec::new();
    let mut cases = 0;
    for client in [Client::Claude, Client::Codex] {
        for scenario in [
            Scenario::KillTool,
            Scenario::Torn,
            Scenario::Orphan,
            Scenario::ThinkingKillTool,
            Scenario::ThinkingBlank,
        ] {
            if client == Client::Codex
                && matches!(
                    scenario,
                    Scenario::ThinkingKillTool | Scenario::ThinkingBlank
                )
            {
                continue;
            }
            for repaired in [false, true] {
                cases += 1;
                let case = Case {
                    client,
                    scenario,
                    repaired,
                };
                let t = Instant::now();
                match run_case(&case, &bin, &transcripts, &root) {
                    Ok(what) => println!(
                        "PASS {} ({:.1} s): {what}",
                        case.name(),
                        t.elapsed().as_secs_f64()
                    ),
                    Err(why) => {
                        println!(
                            "FAIL {} ({:.1} s): {why}",
                            case.name(),
                            t.elapsed().as_secs_f64()
                        );
                        failed.push(case.name());
                    }
                }
            }
        }
    }
    println!(
        "transcript round trip: {} of {cases} cases failed, {:.0} s (cases kept in {})",
        failed.len(),
        start.elapsed().as_secs_f64(),
        root.display()
    );
    assert!(failed.is_empty(), "failed: {failed:?}");
}
