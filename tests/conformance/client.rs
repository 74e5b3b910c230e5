//! Drives the real OpenCode (npm `opencode-ai`, pinned) offline against the mock provider: every
//! case in its own data folder, one shared home (so provider packages install once), nothing
//! written outside `target/conformance/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The OpenCode release the suite checks rewind against.
pub const OPENCODE_VERSION: &str = "1.18.33";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// A custom provider through `@ai-sdk/openai-compatible` (Chat Completions).
    OpenAiCompatible,
    /// OpenCode's built-in `anthropic` provider with its base URL on the mock.
    Anthropic,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAiCompatible => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

pub struct Client {
    pub root: PathBuf,
    pub bin: PathBuf,
    port: u16,
}

/// Why the suite cannot run here, or the installed client.
pub fn install(root: &Path, port: u16) -> Result<Client, String> {
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Err(format!("{tool} is not installed"));
        }
    }
    let oc = root.join("oc");
    let bin = oc.join("node_modules/.bin/opencode");
    let pkg = oc.join("node_modules/opencode-ai/package.json");
    let installed = std::fs::read_to_string(&pkg)
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .is_some_and(|v| v["version"] == OPENCODE_VERSION);
    if !installed {
        std::fs::create_dir_all(&oc).map_err(|e| e.to_string())?;
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .arg(format!("opencode-ai@{OPENCODE_VERSION}"))
            .current_dir(&oc)
            .output()
            .map_err(|e| format!("npm: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "npm install opencode-ai@{OPENCODE_VERSION} failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .chars()
                    .take(400)
                    .collect::<String>()
            ));
        }
    }
    if !bin.exists() {
        return Err(format!("{} is missing after npm install", bin.display()));
    }
    for dir in ["home", "work"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| e.to_string())?;
    }
    let client = Client {
        root: root.to_path_buf(),
        bin,
        port,
    };
    client.write_configs().map_err(|e| e.to_string())?;
    Ok(client)
}

/// A finished (or killed) run of the client.
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Client {
    fn config_dir(&self, p: Provider) -> PathBuf {
        self.root.join("config").join(p.name())
    }

    fn write_configs(&self) -> std::io::Result<()> {
        let base = format!("http://127.0.0.1:{}/v1", self.port);
        let common = |model: &str| {
            json!({
                "$schema": "https://opencode.ai/config.json",
                "autoupdate": false,
                "share": "disabled",
                "model": model,
                "small_model": model,
                "permission": {"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"},
            })
        };
        let mut openai = common("mock/mock-model");
        openai["provider"] = json!({"mock": {
            "npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": base, "apiKey": "mock-key"},
            "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                                       "limit": {"context": 100000, "output": 4096}}}}});
        let mut anthropic = common("anthropic/claude-sonnet-4-5");
        anthropic["provider"] = json!({"anthropic": {
            "options": {"baseURL": base, "apiKey": "mock-key"},
            "models": {"claude-sonnet-4-5": {"name": "Claude Mock", "tool_call": true,
                                              "limit": {"context": 200000, "output": 4096}}}}});
        for (p, cfg) in [
            (Provider::OpenAiCompatible, openai),
            (Provider::Anthropic, anthropic),
        ] {
            let dir = self.config_dir(p).join("opencode");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("opencode.json"), cfg.to_string())?;
        }
        Ok(())
    }

    /// The client's command for a case whose data lives in `data`.
    pub fn command(&self, data: &Path, p: Provider) -> Command {
        let home = self.root.join("home");
        let mut cmd = Command::new(&self.bin);
        cmd.current_dir(self.root.join("work"))
            .env("HOME", &home)
            .env("XDG_DATA_HOME", data)
            .env("XDG_CONFIG_HOME", self.config_dir(p))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("OPENCODE_DISABLE_AUTOUPDATE", "true")
            .env("OPENCODE_DISABLE_MODELS_FETCH", "true")
            .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "true")
            .env("OPENCODE_DISABLE_SHARE", "true")
            .stdin(Stdio::null());
        cmd
    }

    /// `opencode run PROMPT` (continuing `session` when given), waiting at most `limit`.
    pub fn run(&self, data: &Path, p: Provider, session: Option<&str>, prompt: &str) -> Run {
        let mut cmd = self.command(data, p);
        cmd.arg("run");
        if let Some(s) = session {
            cmd.args(["--session", s]);
        }
        cmd.args([prompt, "--format", "json"]);
        wait(cmd, Duration::from_secs(150))
    }

    /// Starts `opencode run PROMPT` in the background.
    pub fn spawn(&self, data: &Path, p: Provider, prompt: &str) -> Child {
        let mut cmd = self.command(data, p);
        cmd.args(["run", prompt, "--format", "json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd.spawn().expect("start opencode")
    }
}

/// Runs `cmd` to its end or until `limit`, then kills it.
pub fn wait(mut cmd: Command, limit: Duration) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let (o, e) = (dir.path().join("out"), dir.path().join("err"));
    cmd.stdout(std::fs::File::create(&o).expect("stdout file"))
        .stderr(std::fs::File::create(&e).expect("stderr file"));
    let mut child = cmd.spawn().expect("start the client");
    let start = Instant::now();
    let ok = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.success();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        thread::sleep(Duration::from_millis(100));
    };
    Run {
        ok,
        stdout: std::fs::read_to_string(&o).unwrap_or_default(),
        stderr: std::fs::read_to_string(&e).unwrap_or_default(),
    }
}

/// Polls `cond` every 200 ms for at most `limit`.
pub fn poll(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        thread::sleep(Duration::from_millis(200));
    }
    false
}

/// Kills a process and every process below it (the client runs tools as children).
pub fn kill_tree(pid: u32) {
    let children = Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    for c in children.split_whitespace() {
        if let Ok(c) = c.parse() {
            kill_tree(c);
        }
    }
}

/// Whether a request from the client is well-formed for its provider: every tool call answered
/// right after, no result without its call, no empty text block.
pub fn request_problems(body: &Value, anthropic: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let shape = shape(body, anthropic);
    let mut seen = std::collections::HashSet::new();
    for id in shape
        .iter()
        .flat_map(|(_, b)| b)
        .filter_map(|b| b.strip_prefix("tool_use:"))
    {
        if !seen.insert(id) {
            problems.push(format!("tool call id {id} is used twice"));
        }
    }
    for (i, (role, blocks)) in shape.iter().enumerate() {
        for b in blocks {
            if b == "text:empty" {
                problems.push(format!("message {i} ({role}) has an empty text block"));
            }
        }
        let calls: Vec<&str> = blocks
            .iter()
            .filter_map(|b| b.strip_prefix("tool_use:"))
            .collect();
        if calls.is_empty() {
            continue;
        }
        // The results that follow: Anthropic's next user message, or OpenAI's tool messages.
        let mut answered = Vec::new();
        for (r, bs) in shape.iter().skip(i + 1) {
            if anthropic && r != "user" {
                break;
            }
            if !anthropic && r != "tool" {
                break;
            }
            for b in bs {
                if let Some(id) = b.strip_prefix("tool_result:") {
                    answered.push(id.trim_end_matches(":error").to_string());
                }
            }
            if anthropic {
                break;
            }
        }
        for c in calls {
            if !answered.iter().any(|a| a == c) {
                problems.push(format!(
                    "tool call {c} in message {i} has no result right after"
                ));
            }
        }
        if anthropic && blocks.last().is_some_and(|b| !b.starts_with("tool_use:")) {
            problems.push(format!("message {i} has content after its tool_use"));
        }
    }
    problems
}

/// A request as (role, blocks): `text`, `text:empty`, `reasoning`, `tool_use:ID`,
/// `tool_result:ID[:error]`, `other:TYPE`. The system prompt is left out.
pub fn shape(body: &Value, anthropic: bool) -> Vec<(String, Vec<String>)> {
    let empty = Vec::new();
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap_or(&empty) {
        let role = m["role"].as_str().unwrap_or("?").to_string();
        if role == "system" {
            continue;
        }
        let mut blocks = Vec::new();
        // Anthropic refuses a text block of only whitespace as it refuses an empty one.
        let text = |t: &str| {
            if t.is_empty() || (anthropic && t.trim().is_empty()) {
                "text:empty".to_string()
            } else {
                "text".to_string()
            }
        };
        match &m["content"] {
            Value::String(s) => blocks.push(text(s)),
            Value::Array(parts) => {
                for b in parts {
                    let ty = b["type"].as_str().unwrap_or("?");
                    blocks.push(match ty {
                        "text" => text(b["text"].as_str().unwrap_or("")),
                        "thinking" | "redacted_thinking" | "reasoning" => "reasoning".into(),
                        "tool_use" => format!("tool_use:{}", b["id"].as_str().unwrap_or("")),
                        "tool_result" => format!(
                            "tool_result:{}{}",
                            b["tool_use_id"].as_str().unwrap_or(""),
                            if b["is_error"] == true { ":error" } else { "" }
                        ),
                        other => format!("other:{other}"),
                    });
                }
            }
            _ => {}
        }
        if !anthropic {
            if m["reasoning_content"]
                .as_str()
                .is_some_and(|r| !r.is_empty())
            {
                blocks.insert(0, "reasoning".to_string());
            }
            if let Some(calls) = m["tool_calls"].as_array() {
                for c in calls {
                    blocks.push(format!("tool_use:{}", c["id"].as_str().unwrap_or("")));
                }
            }
            if role == "tool" {
                blocks = vec![format!(
                    "tool_result:{}",
                    m["tool_call_id"].as_str().unwrap_or("")
                )];
            }
            if role == "assistant" {
                blocks.retain(|b| b != "text:empty");
            }
        }
        out.push((role, blocks));
    }
    out
}
