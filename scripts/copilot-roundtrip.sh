#!/usr/bin/env bash
# `rewind repair` on GitHub Copilot CLI sessions, checked by the real client (npm
# @github/copilot-linux-x64, pinned below) run offline against tests/fixtures/copilot/tools/mock.py
# on 127.0.0.1: each damaged fixture is put in a scratch HOME's ~/.copilot/session-state, repaired
# (or not, for the control cases), and resumed with `copilot --resume <id> -p continue`. A case
# passes when the client resumes, the request it sent carries what rewind said it would (the real
# tool result after a repair; the client's own interruption result otherwise), and the session it
# leaves diagnoses clean. Unpacks the client into target/clients/copilot on the first run (the npm
# registry must be reachable once; about 130 MB packed). Prints one PASS/FAIL line per case.
# Without npm or python3 it says it is skipped and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.0.102
for tool in npm python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "copilot round trip: SKIPPED: $tool is not installed"
    exit 0
  fi
done
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=copilot-linux-x64 ;;
  Linux-aarch64) pkg=copilot-linux-arm64 ;;
  *) echo "copilot round trip: SKIPPED: no Copilot CLI package for $(uname -s)-$(uname -m) here"; exit 0 ;;
esac
target=${CARGO_TARGET_DIR:-target}
clients="$target/clients/copilot"
bin="$clients/package/copilot"
if [ ! -x "$bin" ]; then
  mkdir -p "$clients"
  (cd "$clients" && npm pack "@github/$pkg@$VERSION" >/dev/null && tar xzf "github-$pkg-$VERSION.tgz" && rm -f "github-$pkg-$VERSION.tgz")
fi
bin="$(cd "$clients/package" && pwd)/copilot"
cargo build --quiet
rewind="$(cd "$target/debug" && pwd)/rewind"
work=${ROUNDTRIP_DIR:-$(mktemp -d /tmp/copilot-roundtrip.XXXXXX)}
rm -rf "$work"/*
# One shared cache for the client's unpacked package (about 230 MB), not one per case.
mkdir -p "$work/cache"
fixtures=tests/fixtures/copilot
status=0
port=18790

# case NAME FIXTURE SESSION_ID REPAIR(yes|no) EXPECTED_RESULT_TEXT
run_case() {
  local name=$1 fixture=$2 id=$3 repair=$4 expect=$5
  local home="$work/$name/home" out="$work/$name/out"
  mkdir -p "$home/.copilot/session-state/$id" "$out"
  ln -s "$work/cache" "$home/.cache"
  local events="$home/.copilot/session-state/$id/events.jsonl"
  cp "$fixtures/$fixture.jsonl" "$events"
  if [ "$repair" = yes ]; then
    "$rewind" repair --force "$events" > "$out/repair.txt"
  fi
  port=$((port + 1))
  COPILOT="$bin" WORK="$work/$name/work" timeout 120 \
    bash "$fixtures/tools/record.sh" resume "$port" "$home" "$out" -- --resume "$id" -p continue --allow-all-tools \
    || true
  if python3 - "$out/requests.jsonl" "$expect" <<'EOF'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
main = [r["body"] for r in reqs if r["body"].get("tools")]
results = [c for m in main[0]["messages"] if isinstance(m["content"], list)
           for c in m["content"] if c.get("type") == "tool_result"]
text = json.dumps(results)
sys.exit(0 if sys.argv[2] in text else 1)
EOF
  then
    if [ "$repair" = no ]; then
      echo "PASS $name"
    elif "$rewind" diagnose --fail-on warning "$events" > "$out/after.txt"; then
      echo "PASS $name"
    else
      echo "FAIL $name: the resumed session has findings ($out/after.txt)"; status=1
    fi
  else
    echo "FAIL $name: the request did not carry \"$expect\" ($out/requests.jsonl)"; status=1
  fi
}

tool=60e9647d-3b52-43f3-9554-d39c2e87658a
killed=acf5365e-6f48-43c5-96f8-3892437b6690
run_case repaired-raw-newline raw-newline $tool yes "hello-from-tool"
run_case repaired-concatenated concatenated $tool yes "hello-from-tool"
run_case repaired-nul-before-event nul-before-event $tool yes "hello-from-tool"
run_case repaired-nul-tail nul-tail $tool yes "hello-from-tool"
run_case repaired-killed-tool killed-tool $killed yes "Tool execution was interrupted before a result was recorded"
# Controls: what the client does without the repair (what the findings say).
run_case unrepaired-raw-newline raw-newline $tool no "The execution of this tool, or a previous tool was interrupted."
run_case unrepaired-killed-tool killed-tool $killed no "Tool execution was interrupted before a result was recorded"
rm -rf "$work/cache"
echo "copilot round trip: cases in $work"
exit $status
