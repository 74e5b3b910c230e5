#!/usr/bin/env bash
# OpenCode database throughput: `rewind diagnose` and `rewind check` against SQLite's own JSON
# scan of the same file, side by side in one run.
#
# Generates a database with OpenCode's schema and PARTS parts (default 1,000,000: 1,000 sessions
# × 100 messages × 10 parts, each message a healthy step with text, a tool call and a
# step-finish), then runs, in RUNS interleaved rounds,
#   sqlite3 DB "select count(*) from part where json_extract(data,'$.type')='tool'"
#   rewind diagnose --no-summary DB
#   rewind check DB
# and prints each one's best wall time and peak memory (GNU time), and rewind's ratio to sqlite3.
# GENERATE_ONLY=1 stops after generating (WORK=DIR keeps the database in DIR; without WORK, the
# database goes to a temporary folder removed at the end). BIN=PATH measures that binary instead
# of building the `dist` profile.
#
# SMOKE=1 (`.ci/run`): 200,000 parts, one round, the debug build, and a failure (exit 1) when
# rewind's peak exceeds MAX_PEAK_MIB (default 128; a flat diagnosis needs about 30 MiB, while one
# that keeps every session, as a regression once did, needs about 200 MiB at this size). Times
# are printed, not checked: a debug build on a shared machine says little about speed. Skipped,
# with the reason, when sqlite3 or GNU time is missing.
# Needs the sqlite3 CLI (`apt-get install sqlite3`) and GNU time (`apt-get install time`).
set -euo pipefail
cd "$(dirname "$0")/.."

SMOKE=${SMOKE:-}
if [ -n "$SMOKE" ]; then
  PARTS=${PARTS:-200000}
  RUNS=${RUNS:-1}
fi
MAX_PEAK_MIB=${MAX_PEAK_MIB:-128}
PARTS=${PARTS:-1000000}
RUNS=${RUNS:-3}
SESSIONS=${SESSIONS:-1000}
PER_MESSAGE=10
MESSAGES=$(( PARTS / PER_MESSAGE ))
PER_SESSION=$(( MESSAGES / SESSIONS ))
skip() { # the smoke step is skipped with its reason; a full run cannot go without
  if [ -n "$SMOKE" ]; then
    echo "opencode_db smoke skipped: $1"
    exit 0
  fi
  echo "$1" >&2
  exit 2
}
command -v sqlite3 >/dev/null || skip "sqlite3 not found (apt-get install sqlite3)"
if [ -z "${GENERATE_ONLY:-}" ] && [ ! -x /usr/bin/time ]; then
  skip "GNU time not found at /usr/bin/time (apt-get install time)"
fi

if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
DB="$WORK/opencode.db"

if [ ! -f "$DB" ]; then
  echo "generating $PARTS parts in $DB …"
  sqlite3 "$DB" <<SQL
PRAGMA journal_mode = WAL;
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text,
  icon_url_override text, icon_color text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_initialized integer, sandboxes text NOT NULL, commands text);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, workspace_id text, parent_id text,
  slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL, version text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
INSERT INTO project VALUES ('prj_1', '/w', 'git', NULL, NULL, NULL, NULL, 0, 0, NULL, '[]', NULL);
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < $SESSIONS)
INSERT INTO session SELECT printf('ses_%012xBench%09d', 281474976710655 - i, i), 'prj_1', NULL, NULL,
  'bench', '/w', '', 'Bench session ' || i, '1.18.33', 1771000000000 + i, 1771000000000 + i FROM s;
WITH RECURSIVE m(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM m WHERE i + 1 < $MESSAGES)
INSERT INTO message SELECT printf('msg_%012xBench%09d', (1771000000000 + i * 1000) * 4096, i),
  printf('ses_%012xBench%09d', 281474976710655 - (i / $PER_SESSION), i / $PER_SESSION),
  1771000000000 + i * 1000, 1771000000000 + i * 1000,
  CASE WHEN i % 2 = 0
    THEN '{"role":"user","time":{"created":' || (1771000000000 + i * 1000) || '},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}'
    ELSE '{"role":"assistant","time":{"created":' || (1771000000000 + i * 1000) || ',"completed":' || (1771000000500 + i * 1000) || '},"parentID":"msg_x","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/w","root":"/w"},"cost":0.01,"tokens":{"input":100,"output":50,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}'
  END FROM m;
WITH RECURSIVE p(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM p WHERE i + 1 < $PARTS)
INSERT INTO part SELECT printf('prt_%012xBench%09d', (1771000000000 + (i / $PER_MESSAGE) * 1000) * 4096 + i % $PER_MESSAGE + 1, i),
  printf('msg_%012xBench%09d', (1771000000000 + (i / $PER_MESSAGE) * 1000) * 4096, i / $PER_MESSAGE),
  printf('ses_%012xBench%09d', 281474976710655 - (i / $PER_MESSAGE / $PER_SESSION), i / $PER_MESSAGE / $PER_SESSION),
  1771000000000, 1771000000000,
  CASE i % $PER_MESSAGE
    WHEN 0 THEN '{"type":"step-start","snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904"}'
    WHEN 9 THEN '{"type":"step-finish","reason":"tool-calls","snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904","cost":0.01,"tokens":{"input":100,"output":50,"reasoning":0,"cache":{"read":0,"write":0}}}'
    WHEN 1 THEN '{"type":"text","text":"Let me look at the file and run the tests before changing anything.","time":{"start":1771000000000,"end":1771000000100}}'
    WHEN 2 THEN '{"type":"reasoning","text":"The user wants the upload retry fixed; read the test first.","time":{"start":1771000000000,"end":1771000000100}}'
    ELSE '{"type":"tool","tool":"read","callID":"toolu_' || i || '","state":{"status":"completed","input":{"filePath":"/w/src/upload.ts"},"output":"export async function upload(file: File) {\n  for (let i = 0; i < 3; i++) {\n    try { return await put(file) } catch (e) { await sleep(100 * i) }\n  }\n}","title":"src/upload.ts","metadata":{"lines":5},"time":{"start":1771000000000,"end":1771000000100}}}'
  END FROM p;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
fi
ls -l "$DB"
# GENERATE_ONLY=1: stop after writing the database (benches/html_size.sh uses it).
[ -z "${GENERATE_ONLY:-}" ] || exit 0
if [ -n "${BIN:-}" ]; then
  :
elif [ -n "$SMOKE" ]; then
  cargo build --quiet
  BIN=${CARGO_TARGET_DIR:-target}/debug/rewind
else
  cargo build --profile dist --quiet
  BIN=${CARGO_TARGET_DIR:-target}/dist/rewind
fi

# best[NAME] is the best wall time in seconds, peak[NAME] the largest peak in KiB, over RUNS
# interleaved rounds.
declare -A best peak
measure() { # NAME COMMAND…
  local name=$1 wall rss
  shift
  /usr/bin/time -f '%e %M' -o "$WORK/time" "$@" >/dev/null || true
  read -r wall rss < <(tail -1 "$WORK/time")
  if [ -z "${best[$name]:-}" ] || [ "$(echo "$wall < ${best[$name]}" | bc)" = 1 ]; then
    best[$name]=$wall
  fi
  if [ -z "${peak[$name]:-}" ] || [ "$rss" -gt "${peak[$name]}" ]; then peak[$name]=$rss; fi
}
for _ in $(seq "$RUNS"); do
  measure sqlite3 sqlite3 "$DB" "select count(*) from part where json_extract(data,'\$.type')='tool'"
  measure diagnose "$BIN" diagnose --no-summary "$DB"
  measure check "$BIN" check "$DB"
done

echo "parts: $(sqlite3 "$DB" 'select count(*) from part'), best of $RUNS interleaved rounds ($BIN)"
printf '%-34s %9s %10s %12s\n' "" "wall s" "peak MiB" "vs sqlite3"
row() { # LABEL NAME
  printf '%-34s %9s %10s %11.2fx\n' "$1" "${best[$2]}" "$(( peak[$2] / 1024 ))" \
    "$(echo "scale=4; ${best[$2]} / ${best[sqlite3]}" | bc)"
}
row "sqlite3 json_extract scan" sqlite3
row "rewind diagnose" diagnose
row "rewind check" check

if [ -n "$SMOKE" ]; then
  for name in diagnose check; do
    if [ $(( peak[$name] / 1024 )) -gt "$MAX_PEAK_MIB" ]; then
      echo "FAIL: rewind $name peaked at $(( peak[$name] / 1024 )) MiB on $PARTS parts (bound: $MAX_PEAK_MIB MiB): memory no longer stays flat" >&2
      exit 1
    fi
  done
  echo "ok: rewind's peak stays under $MAX_PEAK_MIB MiB"
fi
