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
# Claude Code's kill_tool runs `echo waiting; sleep 120` rather than the corpus's `sleep 120`: recent 2.1.x
# answers a command that starts with a long sleep with "Blocked: standalone sleep 120" and never runs it.
# resume_* scenarios resume the session left by the kill scenario they name, in the same HOME, so they
# must come after it in SCENARIOS.
#
# OpenCode (client `opencode`) runs through the OpenCode harness ($OC_HARNESS, default
# ../shared/tools/opencode-harness: its mock/mock.py, config/ and run_scn.sh): healthy = `SCN:text`,
# tool = `SCN:tool`, toolfail = `SCN:toolerr`, kill_tool = `SCN:sleeptool` SIGKILLed as soon as a tool part
# is stored `running`, resume_after_kill_tool = `opencode run --session ID "SCN:text continue"` on a copy.
# Its store is kept as `opencode.sql` (`sqlite3 .dump`, which rewind reads) or, for versions before the
# database, as the `storage/` folder. Skipped with a line when the harness or sqlite3 is missing.
#
# Then, unless CLAUDE_BOUNDARY_VERSIONS is empty, the Claude Code versions on either side of two changes
# (2.1.280/2.1.281: the resume of a killed tool call; 2.1.299: last-prompt before the reply, from 2.1.300) are
# recorded with kill_tool, resume_after_kill_tool and kill_stream only.
#
# Environment: CLIENTS ("claude codex opencode"), CLAUDE_VERSIONS, CLAUDE_BOUNDARY_VERSIONS, CODEX_VERSIONS, OPENCODE_VERSIONS, SCENARIOS (a scenario a client
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
CLIENTS=${CLIENTS:-"claude codex opencode"}
CLAUDE_VERSIONS=${CLAUDE_VERSIONS-"1.0.128 2.0.27 2.0.77 2.1.332"}
CODEX_VERSIONS=${CODEX_VERSIONS-"0.40.0 0.100.0 0.140.0 0.171.0"}
OPENCODE_VERSIONS=${OPENCODE_VERSIONS-"1.0.185 1.1.65 1.2.27 1.3.2 1.14.41"}
OC_HARNESS=${OC_HARNESS:-$ROOT/../shared/tools/opencode-harness}
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
  case $c in claude) pkg=@anthropic-ai/claude-code;; codex) pkg=@openai/codex;; opencode) pkg=opencode-ai;; esac
  bin=$dir/node_modules/.bin
  if [ ! -x "$bin/$c" ]; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund "$pkg@$v" > "$dir/install.log" 2>&1 || return 1
  fi
  # `--version` alone writes state under HOME (~/.codex/tmp, ~/.local/share/opencode): give it its own
  version() { HOME=$dir/home XDG_DATA_HOME= XDG_CONFIG_HOME= XDG_CACHE_HOME= XDG_STATE_HOME= timeout 60 "$bin/$c" --version; }
  # some Claude Code 2.1.x packages fetch their native binary in a postinstall step: run it by hand if needed
  if ! version > /dev/null 2>&1 && [ -f "$dir/node_modules/$pkg/install.cjs" ]; then
    (cd "$dir/node_modules/$pkg" && node install.cjs) >> "$dir/install.log" 2>&1
  fi
  version > /dev/null 2>&1 || return 1
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

# opencode_version VERSION BINARY: the OpenCode scenarios of one version
opencode_version() {
  local v=$1 oc=$2 W=$RUNS/opencode-$1 mp s
  local port=$((PORT + 500))
  rm -rf "$W"; mkdir -p "$W/config" "$W/raw"
  cp -r "$OC_HARNESS/config/." "$W/config/"
  sed -i "s/127.0.0.1:18080/127.0.0.1:$port/" "$W"/config/*/opencode/opencode.json
  export W H=$OC_HARNESS OC=$oc MOCK_PORT=$port MOCK_LOG=$W/requests.jsonl
  : > "$MOCK_LOG"
  python3 "$OC_HARNESS/mock/mock.py" > "$W/mock.out" 2>&1 & mp=$!
  sleep 1
  for s in $SCENARIOS; do
    case $s in
      healthy|tool|toolfail)
        local scn=$s; [ $s = healthy ] && scn=text; [ $s = toolfail ] && scn=toolerr
        RUNS=$W/runs RUN_NAME=$s OC_TIMEOUT=90 bash "$OC_HARNESS/run_scn.sh" $scn > /dev/null;;
      kill_tool) (
        . "$OC_HARNESS/env.sh"; R=$W/runs/kill_tool; mkdir -p "$R"; export XDG_DATA_HOME=$R/data
        local db=$R/data/opencode/opencode.db mark i pid k
        mark=$(wc -l < "$MOCK_LOG"); cd "$W/work"
        "$OC" run "SCN:sleeptool go" --format json --print-logs --log-level INFO > "$R/run.out" 2> "$R/run.err" & pid=$!
        for i in $(seq 1 120); do
          sleep 0.5
          if [ -f "$db" ]; then
            [ -n "$(sqlite3 -cmd '.timeout 2000' "$db" "select id from part where json_extract(data,'\$.state.status')='running'" 2>/dev/null)" ] && break
          elif grep -rqs '"status": *"running"' "$R/data/opencode/storage/part"; then break; fi
        done
        sleep 0.5
        echo "SIGKILL opencode after $i polls of its store" > "$R/kill.log"
        k=$(pgrep -P $pid); kill -9 $pid; wait $pid 2>/dev/null; echo "client exit: 137" > "$R/rc"
        for c in $k; do kill -9 $c 2>/dev/null && echo "ended child $c" >> "$R/kill.log"; done
        tail -n +$((mark + 1)) "$MOCK_LOG" > "$R/requests.jsonl" );;
      resume_after_kill_tool) (
        . "$OC_HARNESS/env.sh"; R=$W/runs/resume_after_kill_tool; rm -rf "$R"; mkdir -p "$R"
        [ -d "$W/runs/kill_tool/data" ] || exit 0
        cp -a "$W/runs/kill_tool/data" "$R/data"; export XDG_DATA_HOME=$R/data
        local db=$R/data/opencode/opencode.db sid mark
        if [ -f "$db" ]; then sid=$(sqlite3 "$db" "select id from session order by time_created limit 1")
        else sid=$(basename "$(ls "$R"/data/opencode/storage/session/*/ses_*.json | head -1)" .json); fi
        mark=$(wc -l < "$MOCK_LOG"); cd "$W/work"
        timeout 150 "$OC" run --session "$sid" "SCN:text continue" --format json --print-logs --log-level INFO > "$R/run.out" 2> "$R/run.err"
        echo "client exit: $?" > "$R/rc"
        tail -n +$((mark + 1)) "$MOCK_LOG" > "$R/requests.jsonl" );;
      *) continue;;
    esac
    local R=$W/runs/$s raw=$W/raw/$s dest=$OUT/opencode/$v/$s
    [ -d "$R/data" ] || { echo "opencode $v $s: no store written"; continue; }
    rm -rf "$raw" "$dest"; mkdir -p "$raw"
    if [ -f "$R/data/opencode/opencode.db" ]; then sqlite3 "$R/data/opencode/opencode.db" .dump > "$raw/opencode.sql"
    else cp -r "$R/data/opencode/storage" "$raw/storage"; fi
    for f in requests.jsonl run.out kill.log; do [ -f "$R/$f" ] && cp "$R/$f" "$raw/"; done
    local rc="?"; [ -f "$R/rc" ] && rc=$(cat "$R/rc"); echo "client exit: ${rc#client exit: }" > "$raw/client.rc"
    # the session row also keeps the folder relative to / (session.path)
    python3 "$ROOT/scripts/matrix_clean.py" "$raw" "$dest" "$W/work=/home/dev/project" "$W/home=/home/dev" "$W=/home/dev/opencode" \
      "$CACHE=/home/dev/clients" "${W#/}/work=home/dev/project"
    echo "opencode $v $s: $(cat "$raw/client.rc"), $(ls "$dest" | tr '\n' ' ')"
  done
  kill $mp
}

status=0
for c in $CLIENTS; do
  if [ $c = opencode ]; then
    if [ ! -f "$OC_HARNESS/mock/mock.py" ] || ! command -v sqlite3 > /dev/null; then
      echo "opencode: skipped: harness ($OC_HARNESS) or sqlite3 not found"; continue
    fi
    for v in $OPENCODE_VERSIONS; do
      if ! bin=$(install opencode $v) || [ -z "$bin" ]; then
        echo "opencode $v: does not install or run (see $CACHE/opencode-$v/install.log)"; status=1; continue
      fi
      # the platform binary, as the harness runs it (the npm launcher only finds and starts it)
      ocbin=$(dirname "$bin")/opencode-linux-x64/bin/opencode; [ -x "$ocbin" ] || ocbin=$bin/opencode
      opencode_version $v "$ocbin"
    done
    continue
  fi
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
BOUNDARY=${CLAUDE_BOUNDARY_VERSIONS-"2.1.280 2.1.281 2.1.299"}
case " $CLIENTS " in
  *" claude "*) if [ -n "$BOUNDARY" ] && [ -z "${MATRIX_INNER:-}" ]; then
      MATRIX_INNER=1 CLIENTS=claude CLAUDE_VERSIONS="$BOUNDARY" SCENARIOS="kill_tool resume_after_kill_tool kill_stream" \
        MATRIX_PORT=$((PORT + 1)) KILL_AFTER=$KILL_AFTER_S bash "$0" || status=1
    fi;;
esac
exit $status
