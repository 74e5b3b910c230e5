#!/usr/bin/env bash
# Differential conformance: rewind against the real OpenCode (npm `opencode-ai`, the pinned
# version in tests/conformance/client.rs), driven offline against a scripted provider on
# 127.0.0.1. Installs the client into target/conformance/ on the first run (the npm registry must
# be reachable once), then runs every case and prints one PASS/FAIL line each, the count and the
# time taken. Without node or npm it says it is skipped and exits 0. Then runs the round trip of
# repaired Claude Code and Codex transcripts through the real clients (scripts/transcript-roundtrip.sh).
#
#   bash scripts/conformance.sh                        every case (about 10 minutes on 2 cores)
#   REWIND_CONFORMANCE_ONLY=healthy,edit: bash scripts/conformance.sh     the cases whose names
#                                                      contain one of these words
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
for tool in node npm; do
  command -v "$tool" >/dev/null || missing=$tool
done
status=0
if [ -n "$missing" ]; then
  echo "conformance: SKIPPED: $missing is not installed (the suite drives the real OpenCode from npm)"
else
  start=$(date +%s)
  cargo test --test conformance -- --ignored --nocapture || status=$?
  echo "conformance: took $(( $(date +%s) - start )) s"
fi
bash scripts/transcript-roundtrip.sh || status=$?
exit $status
