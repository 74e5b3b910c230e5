//! `rewind mcp` spoken to as a client does, in raw JSON-RPC over the binary's standard input and
//! output (one message a line): `initialize`, `tools/list`, then tool calls. The same calls from
//! the real Python client are `tests/mcp_client.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::repo;
use serde_json::{Value, json};

const FIXTURE: &str = "tests/fixtures/transcripts/claude-orphan-tool.jsonl";

/// A running `rewind mcp` and the responses it writes, line by line.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Server {
    /// Starts the server (in `cwd`) and initialises the session; returns the server and the
    /// `initialize` result.
    fn start(cwd: &Path) -> (Server, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rewind"))
            .arg("mcp")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            next_id: 0,
        };
        let init = server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "rewind-tests", "version": "0"}
            }),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (server, init)
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and waits for its response's `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let message = self.exchange(method, params);
        assert!(message.get("error").is_none(), "{method}: {message}");
        message["result"].clone()
    }

    /// Sends a request and waits for its response (a result or an error).
    fn exchange(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no response to {method} within 60 s: {e}"));
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Closes standard input and waits for the server to exit; returns its status.
    fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill().ok();
        panic!("rewind mcp did not exit within 10 s of its standard input closing");
    }
}

/// What the CLI prints with `--format json` for these arguments, run in `cwd`.
fn cli_json(cwd: &Path, args: &[&str]) -> Value {
    let out = common::rewind()
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn initialize_list_and_call_over_stdio() {
    let cwd = repo("");
    let (mut server, init) = Server::start(&cwd);
    assert_eq!(init["serverInfo"]["name"], "rewind");
    assert_eq!(init["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(init["capabilities"]["tools"].is_object(), "{init}");

    let list = server.request("tools/list", json!({}));
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "diagnose", "explain", "repair", "request", "rules", "sessions"
        ],
        "{list}"
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        let read_only = tool["annotations"]["readOnlyHint"].as_bool();
        assert_eq!(read_only, Some(tool["name"] != "repair"), "{tool}");
    }
    let repair = tools.iter().find(|t| t["name"] == "repair").unwrap();
    assert_eq!(
        repair["inputSchema"]["properties"]["apply"]["type"], "boolean",
        "{repair}"
    );
    let diagnose = tools.iter().find(|t| t["name"] == "diagnose").unwrap();
    assert_eq!(diagnose["inputSchema"]["required"], json!(["paths"]));

    // The document is the CLI's `--format json` document.
    let result = server.call("diagnose", json!({"paths": [FIXTURE]}));
    assert_eq!(result["isError"], false, "{result}");
    let expected = cli_json(
        &cwd,
        &["diagnose", "--format", "json", "--no-summary", FIXTURE],
    );
    assert_eq!(result["structuredContent"], expected);
    let rules: Vec<&Value> = expected["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["rule"])
        .collect();
    assert_eq!(rules, [&json!("tool-never-finished")]);

    assert_eq!(server.close().code(), Some(0));
}

#[test]
fn every_tool_answers_with_the_cli_document() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("session.jsonl");
    std::fs::copy(repo(FIXTURE), &store).unwrap();
    let before = std::fs::read(&store).unwrap();
    let (mut server, _) = Server::start(dir.path());

    let rules = server.call("rules", json!({}));
    assert_eq!(
        rules["structuredContent"],
        cli_json(dir.path(), &["rules", "--format", "json"])
    );

    let explain = server.call("explain", json!({"rule": "tool-use-without-result"}));
    let entry = &explain["structuredContent"];
    assert_eq!(entry["name"], "tool-use-without-result");
    assert_eq!(entry["severity"], "error");
    let listed = rules["structuredContent"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "tool-use-without-result")
        .unwrap();
    assert_eq!(entry["doc"], listed["doc"]);

    let sessions = server.call("sessions", json!({"store": "session.jsonl"}));
    assert_eq!(
        sessions["structuredContent"],
        cli_json(
            dir.path(),
            &["sessions", "--format", "json", "session.jsonl"]
        )
    );
    assert_eq!(
        sessions["structuredContent"]["sessions"][0]["findings"]["errors"],
        1
    );

    let request = server.call("request", json!({"store": "session.jsonl"}));
    assert_eq!(
        request["structuredContent"],
        cli_json(
            dir.path(),
            &["request", "--format", "json", "session.jsonl"]
        )
    );

    // A dry run unless asked: the plan, and the file as it was.
    let plan = server.call("repair", json!({"store": "session.jsonl"}));
    assert_eq!(plan["isError"], false, "{plan}");
    assert_eq!(plan["structuredContent"]["dry_run"], true);
    assert_eq!(
        plan["structuredContent"]["plan"][0]["call_id"],
        "toolu_fx_001"
    );
    assert_eq!(std::fs::read(&store).unwrap(), before);
    let explicit = server.call("repair", json!({"store": "session.jsonl", "apply": false}));
    assert_eq!(explicit["structuredContent"]["dry_run"], true);
    assert_eq!(std::fs::read(&store).unwrap(), before);

    // The CLI's guard holds: a transcript written moments ago is a client's, and left alone.
    let refused = server.call("repair", json!({"store": "session.jsonl", "apply": true}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a client is writing it"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&store).unwrap(), before);
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&store)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let applied = server.call("repair", json!({"store": "session.jsonl", "apply": true}));
    assert_eq!(applied["isError"], false, "{applied}");
    assert_eq!(applied["structuredContent"]["applied"], true, "{applied}");
    assert_ne!(std::fs::read(&store).unwrap(), before);
    let after = server.call("diagnose", json!({"paths": ["session.jsonl"]}));
    assert_eq!(after["structuredContent"]["findings"], json!([]), "{after}");

    assert_eq!(server.close().code(), Some(0));
}

#[test]
fn bad_calls_are_tool_errors_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, _) = Server::start(dir.path());
    let text = |result: &Value| -> String {
        assert_eq!(result["isError"], true, "{result}");
        result["content"][0]["text"].as_str().unwrap().to_owned()
    };

    // The CLI's own error line.
    let missing = server.call("diagnose", json!({"paths": ["nowhere.log"]}));
    let cli = common::rewind()
        .current_dir(dir.path())
        .args(["diagnose", "--format", "json", "nowhere.log"])
        .output()
        .unwrap();
    let cli_err = String::from_utf8_lossy(&cli.stderr);
    assert!(
        missing["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["text"] == cli_err.trim_end()),
        "{missing}\nCLI: {cli_err}"
    );
    assert_eq!(missing["isError"], true);

    assert_eq!(
        text(&server.call("explain", json!({"rule": "tool-error-droppd"}))),
        "error: unknown rule `tool-error-droppd`; did you mean `tool-error-dropped`?"
    );
    // Standard input carries the protocol: no tool reads it.
    for path in ["-", "/dev/stdin"] {
        let refused = text(&server.call("diagnose", json!({"paths": [path]})));
        assert!(
            refused.contains("standard input carries the protocol"),
            "{refused}"
        );
    }
    // A value that looks like an option is a value.
    let dashed = text(&server.call("request", json!({"store": "--help"})));
    assert!(dashed.contains("--help"), "{dashed}");
    let provider = text(&server.call("request", json!({"store": "x.jsonl", "provider": "nobody"})));
    assert!(provider.contains("nobody"), "{provider}");
    assert!(text(&server.call("diagnose", json!({"paths": []}))).contains("at least one path"));

    // Wrong-shaped arguments: an error, not a crash.
    let wrong = server.exchange(
        "tools/call",
        json!({"name": "diagnose", "arguments": {"paths": 7}}),
    );
    assert!(
        wrong["error"]["message"].is_string() || wrong["result"]["isError"] == true,
        "{wrong}"
    );
    let still = server.call("rules", json!({}));
    assert_eq!(still["isError"], false);

    assert_eq!(server.close().code(), Some(0));
}
