#!/usr/bin/env bash
# scripts/matrix.sh — re-record tests/fixtures/matrix/: the same scripted conversations played by
# several versions of the real clients (Claude Code, Codex CLI), offline, against the scripted mock
# scripts/matrix-tools/ (mock.py, run_claude.sh, run_codex.sh: copies of ../shared/corpus/transcripts/tools/;
# the one change: the kill_tool command can be set with MOCK_KILL_CMD, see below).
#
#   scripts/matrix.sh                      # every client, version and scenario below
#   CLIENTS=codex CODEX_VERSIONS=0.171.0 SCENARIOS="healthy tool" scripts/matrix.sh
#
# Each version is installed once with npm into $MATRIX_CACHE/<claude|codex>-<version>/ (default
# ~/.cache/rewind-matrix). Each scenario runs the client in a scratch folder under $MATRIX_RUNS
# (default /tmp/rewind-matrix-runs/<client>-<version>/: project/ is the working folder, home-<scenario>/
# the HOME), exactly as the corpus READMEs say (same prompts, flags and mock scenario; Claude Code on
# ANTHROPIC_API_KEY=dummy + ANTHROPIC_BASE_URL, Codex on a custom `wire_api = "responses"` provider).
# The result is cleaned by scripts/matrix_clean.py (machine paths -> /home/dev/project and
# /home/dev/<scenario>; the clients' own system prompt / instructions / tools in requests.jsonl -> a
# placeholder with the omitted byte count) into $MATRIX_OUT/<client>/<version>/<scenario>/ (default
# tests/fixtures/matrix). Kill scenarios SIGKILL the client $KILL_AFTER seconds (default 8) after start.
# Claude Code's kill_tool runs `echo waiting; sleep 120` rather than the corpus's `sleep 120`: 2.1.3xx
# answers a command that starts with a long sleep with "Blocked: standalone sleep 120" and never runs it.
# resume_* scenarios resume the session left by the kill scenario they name, in the same HOME, so they
# must come after it in SCENARIOS.
#
# Environment: CLIENTS ("claude codex"), CLAUDE_VERSIONS, CODEX_VERSIONS, SCENARIOS (a scenario a client
# has no recipe for is skipped), MATRIX_TOOLS (scripts/matrix-tools), MATRIX_CACHE, MATRIX_RUNS,
# MATRIX_OUT, MATRIX_PORT (first mock port, default 19371; one port per run), KILL_AFTER.
# Needs node/npm (the registry once per version), python3; exits 0 with "skipped: ..." without them.
# A version that will not install or run is reported and the matrix goes on. Takes ~1 minute per version.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=${MATRIX_TOOLS:-$ROOT/scripts/matrix-tools}
CACHE=${MATRIX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rewind-matrix}
RUNS=${MATRIX_RUNS:-/tmp/rewind-matrix-runs}
OUT=${MATRIX_OUT:-$ROOT/tests/fixtures/matrix}
CLIENTS=${CLIENTS:-"claude codex"}
CLAUDE_VERSIONS=${CLAUDE_VERSIONS:-"1.0.128 2.0.27 2.0.77 2.1.332"}
CODEX_VERSIONS=${CODEX_VERSIONS:-"0.40.0 0.100.0 0.140.0 0.171.0"}
SCENARIOS=${SCENARIOS:-"healthy tool toolfail kill_tool resume_after_kill_tool kill_stream resume_after_kill_stream"}
PORT=${MATRIX_PORT:-19371}
KILL_AFTER_S=${KILL_AFTER:-8}
unset KILL_AFTER

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "skipped: node/npm not found"; exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then echo "skipped: python3 not found"; exit 0; fi
if [ ! -f "$TOOLS/mock.py" ] || [ ! -f "$TOOLS/run_claude.sh" ]; then
  echo "skipped: mock and runners not found in $TOOLS (set MATRIX_TOOLS)"; exit 0
fi

# install CLIENT VERSION -> prints the bin folder, or nothing
install() {
  local c=$1 v=$2 pkg bin dir=$CACHE/$1-$2
  case $c in claude) pkg=@anthropic-ai/claude-code;; codex) pkg=@openai/codex;; esac
  bin=$dir/node_modules/.bin
  if [ ! -x "$bin/$c" ]; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund "$pkg@$v" > "$dir/install.log" 2>&1 || return 1
  fi
  # some Claude Code 2.1.x packages fetch their native binary in a postinstall step: run it by hand if needed
  if ! timeout 60 "$bin/$c" --version > /dev/null 2>&1 && [ -f "$dir/node_modules/$pkg/install.cjs" ]; then
    (cd "$dir/node_modules/$pkg" && node install.cjs) >> "$dir/install.log" 2>&1
  fi
  timeout 60 "$bin/$c" --version > /dev/null 2>&1 || return 1
  echo "$bin"
}

# recipe CLIENT SCENARIO -> sets MOCK_SC, ARGS (array), KILL, HOME_OF (scenario whose HOME is reused), RESUME
recipe() {
  local c=$1 s=$2 CL=(--output-format stream-json --verbose) T=(--allowedTools "Bash Read")
  MOCK_SC=$s; KILL=; HOME_OF=$s; RESUME=; ARGS=(); KILL_CMD="sleep 120"
  case $c:$s in
    claude:healthy)   ARGS=(-p "Say hello" "${CL[@]}");;
    claude:tool)      ARGS=(-p "Run echo hello-from-tool in the shell" "${CL[@]}" "${T[@]}");;
    claude:toolfail)  ARGS=(-p "Read the file /home/dev/does-not-exist.txt" "${CL[@]}" "${T[@]}");;
    claude:kill_tool) ARGS=(-p "Sleep for two minutes using the shell" "${CL[@]}" "${T[@]}"); KILL=$KILL_AFTER_S
      KILL_CMD="echo waiting; sleep 120";;
    claude:kill_stream) ARGS=(-p "Tell me a long story" "${CL[@]}" "${T[@]}"); KILL=$KILL_AFTER_S;;
    claude:resume_after_kill_tool) MOCK_SC=resume; HOME_OF=kill_tool; RESUME=1
      ARGS=(--resume @ID@ -p "Continue please" "${CL[@]}" "${T[@]}");;
    codex:healthy)    ARGS=(exec --skip-git-repo-check --json "Say hello");;
    codex:tool)       ARGS=(exec --skip-git-repo-check --json "Run echo hello-from-tool");;
    codex:toolfail)   ARGS=(exec --skip-git-repo-check --json "Show the file /home/dev/does-not-exist.txt");;
    codex:kill_tool)  ARGS=(exec --skip-git-repo-check --json "Sleep for two minutes in the shell"); KILL=$KILL_AFTER_S;;
    codex:kill_stream) ARGS=(exec --skip-git-repo-check --json "Tell me a long story"); KILL=$KILL_AFTER_S;;
    codex:resume_after_kill_tool|codex:resume_after_kill_stream) MOCK_SC=resume; HOME_OF=${s#resume_after_}; RESUME=1
      ARGS=(exec --skip-git-repo-check --json resume @ID@ "Continue please");;
    *) return 1;;
  esac
}

# the session id left in HOME by the previous run
session_id() {
  local c=$1 h=$2 f
  if [ "$c" = claude ]; then
    # not the agent-*.jsonl side chains (2.0.x writes "Warmup" agents next to the session)
    f=$(find "$h/.claude/projects" -maxdepth 2 -name '*.jsonl' ! -name 'agent-*' 2>/dev/null | head -1); basename "${f%.jsonl}"
  else
    f=$(find "$h/.codex/sessions" -name 'rollout-*.jsonl' 2>/dev/null | sort | head -1); f=${f%.jsonl}; echo "${f: -36}"
  fi
}

# copy the client's transcript(s) from HOME into the raw output folder
collect() {
  local c=$1 h=$2 raw=$3 d
  if [ "$c" = claude ]; then
    for d in "$h"/.claude/projects/*/; do [ -d "$d" ] && cp -r "$d". "$raw/"; done
  else
    find "$h/.codex/sessions" -name 'rollout-*.jsonl' -exec cp {} "$raw/" \; 2>/dev/null
  fi
}

status=0
for c in $CLIENTS; do
  case $c in claude) vers=$CLAUDE_VERSIONS; name=claude-code; runner=$TOOLS/run_claude.sh;;
             codex) vers=$CODEX_VERSIONS; name=codex; runner=$TOOLS/run_codex.sh;;
             *) echo "unknown client $c"; continue;; esac
  for v in $vers; do
    if ! bin=$(install $c $v) || [ -z "$bin" ]; then
      echo "$name $v: does not install or run (see $CACHE/$c-$v/install.log)"; status=1; continue
    fi
    base=$RUNS/$c-$v; mkdir -p "$base/project"
    maps=("$base/project=/home/dev/project" "$CACHE=/home/dev/clients")
    for s in $SCENARIOS; do
      recipe $c $s || continue
      h=$base/home-$HOME_OF; raw=$base/raw/$s
      rm -rf "$raw"; [ -z "$RESUME" ] && rm -rf "$h"
      maps+=("$h=/home/dev/$HOME_OF")
      if [ -n "$RESUME" ]; then
        id=$(session_id $c "$h")
        if [ -z "$id" ]; then echo "$name $v $s: no session left by $HOME_OF, skipped"; continue; fi
        ARGS=("${ARGS[@]/@ID@/$id}")
      fi
      PORT=$((PORT + 1))
      WORK=$base/project BIN=$bin KILL_AFTER=$KILL MOCK_KILL_CMD=$KILL_CMD timeout 300 bash "$runner" $MOCK_SC $PORT "$h" "$raw" -- "${ARGS[@]}"
      collect $c "$h" "$raw"
      dest=$OUT/$name/$v/$s
      rm -rf "$dest"
      python3 "$ROOT/scripts/matrix_clean.py" "$raw" "$dest" "${maps[@]}" "$base=/home/dev"
      echo "$name $v $s: $(cat "$raw/client.rc" 2>/dev/null), $(ls "$dest" | tr '\n' ' ')"
    done
  done
done
exit $status
