#!/usr/bin/env bash
# OpenCode database throughput: `rewind diagnose` against SQLite's own JSON scan of the same file.
#
# Generates a database with OpenCode's schema and PARTS parts (default 1,000,000: 1,000 sessions
# × 100 messages × 10 parts, each message a healthy step with text, a tool call and a
# step-finish), then times
#   sqlite3 DB "select count(*) from part where json_extract(data,'$.type')='tool'"
# and `rewind diagnose DB` (best of RUNS), and prints the ratio and rewind's peak memory.
# GENERATE_ONLY=1 stops after generating (WORK=DIR keeps the database in DIR).
# Needs the sqlite3 CLI (`apt-get install sqlite3`) and GNU time for peak memory (optional).
set -euo pipefail
cd "$(dirname "$0")/.."

PARTS=${PARTS:-1000000}
RUNS=${RUNS:-3}
SESSIONS=${SESSIONS:-1000}
PER_MESSAGE=10
MESSAGES=$(( PARTS / PER_MESSAGE ))
PER_SESSION=$(( MESSAGES / SESSIONS ))
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
DB="$WORK/opencode.db"

command -v sqlite3 >/dev/null || { echo "sqlite3 not found: apt-get install sqlite3" >&2; exit 2; }

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
cargo build --profile dist --quiet
BIN=${CARGO_TARGET_DIR:-target}/dist/rewind

best() { # best wall time in seconds of "$@" over RUNS runs
  local best=""
  for _ in $(seq "$RUNS"); do
    local s e t
    s=$(date +%s.%N); "$@" >/dev/null || true; e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  echo "$best"
}

SQL_T=$(best sqlite3 "$DB" "select count(*) from part where json_extract(data,'\$.type')='tool'")
REW_T=$(best "$BIN" diagnose --no-summary "$DB")
echo "parts:                      $(sqlite3 "$DB" 'select count(*) from part')"
echo "sqlite3 json_extract scan:  ${SQL_T}s"
echo "rewind diagnose:            ${REW_T}s"
echo "ratio:                      $(echo "scale=2; $REW_T / $SQL_T" | bc)x"
if [ -x /usr/bin/time ]; then
  RSS=$( { /usr/bin/time -f '%M' "$BIN" diagnose --no-summary "$DB" >/dev/null; } 2>&1 | tail -1 ) || true
  echo "rewind peak memory:         $(( RSS / 1024 )) MiB"
fi
