#!/usr/bin/env bash
# `rewind repair` on Claude Code transcripts and Codex rollouts, checked by the real clients
# (npm @anthropic-ai/claude-code and @openai/codex, pinned in tests/transcript_roundtrip.rs):
# the corpus's killed-mid-tool and torn-last-line sessions are repaired (or not) in a scratch HOME
# and resumed against the corpus's scripted provider on 127.0.0.1. Installs the clients into
# target/clients/ on the first run (the npm registry must be reachable once), prints one PASS/FAIL
# line per case and the time taken. Without node, npm, python3 or the corpus it says it is skipped
# and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node npm python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "transcript round trip: SKIPPED: $tool is not installed (it drives the real Claude Code and Codex from npm)"
    exit 0
  fi
done
start=$(date +%s)
status=0
cargo test --test transcript_roundtrip -- --ignored --nocapture || status=$?
echo "transcript round trip: took $(( $(date +%s) - start )) s"
exit $status
