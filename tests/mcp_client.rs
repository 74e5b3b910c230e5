//! `rewind mcp` against a real MCP client: the `mcp` package from PyPI, driven by
//! `scripts/mcp_client.py`, which initialises, lists the tools and calls each one.
//!
//! The client is looked for in `REWIND_MCP_PYTHON` (a Python with `mcp` installed), then in
//! `mcp-client/venv` of the target folder (where `bash scripts/mcp-client.sh` installs it). It
//! needs a client installed from PyPI, so `cargo test` lists it as ignored with the reason;
//! `bash scripts/mcp-client.sh` installs the client and runs it (`.ci/run` does). Without a
//! client it says why and passes. The same exchange without Python is `tests/mcp.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::repo;
use serde_json::{Value, json};

/// A Python that imports `mcp`, or why there is none.
fn client_python() -> Result<PathBuf, String> {
    let python = match std::env::var_os("REWIND_MCP_PYTHON") {
        Some(p) => PathBuf::from(p),
        // The target folder: the one the binary under test was built in.
        None => PathBuf::from(env!("CARGO_BIN_EXE_rewind"))
            .ancestors()
            .nth(2)
            .unwrap_or(&repo("target"))
            .join("mcp-client/venv/bin/python3"),
    };
    match Command::new(&python).args(["-c", "import mcp"]).output() {
        Ok(out) if out.status.success() => Ok(python),
        Ok(_) => Err(format!("{} cannot import `mcp`", python.display())),
        Err(e) => Err(format!("no Python at {} ({e})", python.display())),
    }
}

#[test]
#[ignore = "drives rewind mcp with the Python MCP client from PyPI: run `bash scripts/mcp-client.sh`"]
fn the_python_client_initialises_lists_and_calls_every_tool() {
    let python = match client_python() {
        Ok(p) => p,
        Err(why) => {
            println!(
                "mcp client: SKIPPED, {why}: `bash scripts/mcp-client.sh` installs the client from PyPI and runs this test"
            );
            return;
        }
    };
    let out = Command::new(&python)
        .arg(repo("scripts/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_rewind"))
        .arg(repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_eq!(
        report["serverInfo"],
        json!({"name": "rewind", "version": env!("CARGO_PKG_VERSION")})
    );
    assert!(report["capabilities"]["tools"].is_object(), "{report}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "diagnose", "explain", "repair", "request", "rules", "sessions"
        ]
    );

    let calls = report["calls"].as_array().unwrap();
    let called: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    for tool in &tools {
        assert!(called.contains(tool), "{tool} was not called");
    }
    let (ok, failed) = calls.split_at(calls.len() - 1);
    for call in ok {
        assert_eq!(call["isError"], false, "{call}");
        let doc = &call["structuredContent"];
        assert_eq!(doc["tool"]["name"], "rewind", "{call}");
        // Read-only, and `repair` without `apply` too.
        assert_eq!(call["storeUnchanged"], true, "{call}");
    }
    let by_tool = |name: &str| ok.iter().find(|c| c["tool"] == name).unwrap();
    assert!(
        by_tool("rules")["structuredContent"]["rules"]
            .as_array()
            .unwrap()
            .len()
            > 20
    );
    assert_eq!(
        by_tool("explain")["structuredContent"]["name"],
        "tool-never-finished"
    );
    assert_eq!(
        by_tool("sessions")["structuredContent"]["sessions"][0]["findings"]["errors"],
        1
    );
    assert_eq!(
        by_tool("request")["structuredContent"]["client"],
        "claude-code"
    );
    let findings = &by_tool("diagnose")["structuredContent"]["findings"];
    assert_eq!(findings[0]["rule"], "tool-never-finished", "{findings}");
    let plan = &by_tool("repair")["structuredContent"];
    assert_eq!(plan["dry_run"], true);
    assert_eq!(plan["plan"][0]["call_id"], "toolu_fx_001");

    let failed = &failed[0];
    assert_eq!(failed["isError"], true, "{failed}");
    let text = failed["text"].to_string();
    assert!(text.contains("cannot read `missing.log`"), "{failed}");
    println!(
        "mcp client: the Python client (protocol {}) called {} tools",
        report["protocolVersion"],
        tools.len()
    );
}
