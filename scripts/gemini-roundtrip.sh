#!/usr/bin/env bash
# `rewind repair` on Gemini CLI sessions, checked by the real client (npm @google/gemini-cli,
# pinned below) resuming them offline against scripts/gemini-mock.py on 127.0.0.1: each broken
# fixture of tests/fixtures/gemini/ is resumed as it is and after `rewind repair`, and the
# request the client sent on resume is checked for the Gemini API's pairing (every
# `functionCall` of a model turn answered by a `functionResponse` in the next turn).
# Installs the client into target/clients/gemini on the first run (the npm registry must be
# reachable once); prints one PASS/FAIL line per case. Without node, npm or python3 it says it
# is skipped and exits 0. Cases stay in target/gemini-roundtrip/.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.61.0
for tool in node npm python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "gemini round trip: SKIPPED: $tool is not installed (it drives the real Gemini CLI from npm)"
    exit 0
  fi
done
ROOT=$PWD
CLIENTS=${GEMINI_NPM:-$ROOT/target/clients/gemini}
ENTRY=$CLIENTS/node_modules/@google/gemini-cli/bundle/gemini.js
if [ ! -f "$ENTRY" ] || ! grep -q "\"version\": \"$VERSION\"" "$CLIENTS/node_modules/@google/gemini-cli/package.json"; then
  npm install --prefix "$CLIENTS" "@google/gemini-cli@$VERSION" --no-audit --no-fund >/dev/null
fi
cargo build --quiet
REWIND=${CARGO_TARGET_DIR:-$ROOT/target}/debug/rewind
OUT=$ROOT/target/gemini-roundtrip
rm -rf "$OUT"; mkdir -p "$OUT"
PORT=${PORT:-18971}
status=0

# pairing REQUESTS: "ok" when the last main request pairs every call, else what breaks.
pairing() {
  python3 - "$1" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
main = [r for r in reqs if "streamGenerateContent" in r["path"] and isinstance(r["body"], dict) and r["body"].get("tools")]
if not main:
    print("no request"); sys.exit()
contents = main[-1]["body"]["contents"]
for i, c in enumerate(contents):
    if c.get("role") != "model":
        continue
    calls = [p["functionCall"].get("id") for p in c.get("parts", []) if "functionCall" in p]
    nxt = contents[i + 1] if i + 1 < len(contents) else {}
    answered = {p["functionResponse"].get("id") for p in nxt.get("parts", []) if "functionResponse" in p and nxt.get("role") == "user"}
    missing = [x for x in calls if x not in answered]
    if missing:
        print(f"turn {i} calls {missing} without a functionResponse after it"); sys.exit()
print("ok")
PY
}

# case NAME FIXTURE REPAIR(yes|no) EXPECT(ok|broken)
case_() {
  local name=$1 fixture=$2 repair=$3 expect=$4
  local dir=$OUT/$name home=$OUT/$name/home
  mkdir -p "$dir"
  # A first session makes the project's chats folder; the fixture goes next to it.
  GEMINI="node $ENTRY" WORK=$home/work bash scripts/gemini-run.sh healthy "$PORT" "$home" "$dir/first" -- -p "hello" >/dev/null 2>&1 || true
  local chats
  chats=$(dirname "$(ls "$home"/.gemini/tmp/*/chats/session-*.jsonl | head -1)")
  local id
  id=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline()).get('sessionId',''))" "$ROOT/tests/fixtures/gemini/$fixture")
  local file=$chats/session-2026-01-01T00-00-${id:0:8}.jsonl
  cp "$ROOT/tests/fixtures/gemini/$fixture" "$file"
  if [ "$repair" = yes ]; then
    "$REWIND" repair "$file" --force --format json > "$dir/repair.json"
  fi
  GEMINI="node $ENTRY" WORK=$home/work bash scripts/gemini-run.sh resume "$PORT" "$home" "$dir/resume" -- --resume "$id" -p "continue" >/dev/null 2>&1 || true
  local got
  got=$(pairing "$dir/resume/requests.jsonl")
  local verdict=FAIL
  if { [ "$expect" = ok ] && [ "$got" = ok ]; } || { [ "$expect" = broken ] && [ "$got" != ok ] && [ "$got" != "no request" ]; }; then
    verdict=PASS
  fi
  [ "$verdict" = PASS ] || status=1
  echo "$verdict $name: $got ($(cat "$dir/resume/client.rc" 2>/dev/null))"
}

start=$(date +%s)
case_ unanswered-as-is unanswered-call.jsonl no broken
case_ unanswered-repaired unanswered-call.jsonl yes ok
case_ torn-as-is torn-last-line.jsonl no ok
case_ torn-repaired torn-last-line.jsonl yes ok
echo "gemini round trip (Gemini CLI $VERSION): took $(( $(date +%s) - start )) s"
exit $status
