#!/usr/bin/env bash
# rewind mcp against the real MCP client: installs the `mcp` package from PyPI (the pinned version
# below) into mcp-client/venv of the target folder on the first run, then runs tests/mcp_client.rs, which drives
# `rewind mcp` with it (initialize, tools/list, a call of every tool). Without python3 or its venv
# module, or when PyPI cannot be reached, it says the test is skipped and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
MCP_VERSION=2.3.0
venv=${CARGO_TARGET_DIR:-target}/mcp-client/venv
if [ ! -x "$venv/bin/python3" ] || ! "$venv/bin/python3" -c "import mcp" 2>/dev/null; then
  if ! command -v python3 >/dev/null; then
    echo "mcp client: SKIPPED: python3 is not installed"
    exit 0
  fi
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    echo "mcp client: SKIPPED: python3 cannot make a virtual environment (Debian: apt-get install python3-venv)"
    rm -rf "$venv"
    exit 0
  fi
  echo "mcp client: installing mcp==$MCP_VERSION from PyPI"
  if ! "$venv/bin/pip" install -q "mcp==$MCP_VERSION"; then
    echo "mcp client: SKIPPED: mcp==$MCP_VERSION could not be installed from PyPI"
    rm -rf "$venv"
    exit 0
  fi
fi
cargo test --test mcp_client -- --ignored --nocapture
