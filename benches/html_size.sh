#!/usr/bin/env bash
# The HTML report on large inputs: page size, time and peak memory to write it, and how long a
# headless Chromium takes to load it (when /usr/bin/chromium or $CHROMIUM is there; its start-up
# alone, on an empty page, is printed first).
#
#   bash benches/html_size.sh
#
# Inputs, generated once under target/bench-html/ (kept for later runs):
#   store-1000   an OpenCode database of 1,000 sessions × 10 messages × 10 parts (benches/opencode_db.sh)
#   db-1m        the same with 1,000,000 parts (1,000 sessions × 100 messages × 10 parts)
#                (in both, every 100th session has a tool left running and its last step-finish
#                dropped: 10 sessions with findings, the other 990 healthy)
#   capture-1m   a healthy Chat Completions capture of about 1,000,000 events (benches/gen_capture.py)
#   bad-1m       1,000,000 undecodable events (as benches/bad_events.sh writes them)
# The captures are written with `diagnose --format html` and with
# `replay --compare opencode opencode-fixed --format html`. Needs sqlite3 and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
dir=$target/bench-html
mkdir -p "$dir"
cargo build --profile dist --quiet
bin=$target/dist/rewind
chromium=${CHROMIUM:-/usr/bin/chromium}

# A store of PARTS parts in 1,000 sessions, with findings in every 100th session.
store() {
  local name=$1 parts=$2 db=$dir/$1/opencode.db
  WORK=$dir/$name PARTS=$parts SESSIONS=1000 GENERATE_ONLY=1 bash benches/opencode_db.sh >/dev/null
  if [ ! -f "$dir/$name/injected" ]; then
    sqlite3 "$db" "
      CREATE TEMP TABLE bad AS SELECT id FROM session WHERE CAST(substr(id, -9) AS INTEGER) % 100 = 0;
      UPDATE part SET data = json_set(data, '\$.state.status', 'running') WHERE id IN (
        SELECT max(id) FROM part WHERE session_id IN (SELECT id FROM bad)
          AND json_extract(data, '\$.type') = 'tool' GROUP BY session_id);
      DELETE FROM part WHERE id IN (
        SELECT max(id) FROM part WHERE session_id IN (SELECT id FROM bad)
          AND json_extract(data, '\$.type') = 'step-finish' GROUP BY session_id);
      PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
    touch "$dir/$name/injected"
  fi
}

# Seconds Chromium takes to load FILE and print its DOM.
load() {
  [ -x "$chromium" ] || { echo "-"; return; }
  local s e
  s=$(date +%s.%N)
  timeout 300 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$dir/chromium-profile" --dump-dom "file://$(realpath "$1")" >/dev/null 2>&1 || true
  e=$(date +%s.%N)
  printf '%.2f' "$(echo "$e - $s" | bc)"
}

# LABEL ARGS…: runs `rewind ARGS…`, its output being the page.
measure() {
  local label=$1
  shift
  local page=$dir/$label.html
  /usr/bin/time -f '%e %M' -o "$dir/$label.time" "$bin" "$@" >"$page" || true
  local wall rss
  read -r wall rss < <(tail -1 "$dir/$label.time")
  printf '%-22s %12s bytes %8s s %7s MiB   chromium %6s s   %s\n' "$label" "$(wc -c <"$page")" \
    "$wall" "$((rss / 1024))" "$(load "$page")" "$(grep -o 'page size: [^<]*' "$page" | tail -1)"
}

echo "generating inputs under $dir (once) …"
store store-1000 100000
store db-1m 1000000
[ -f "$dir/capture-1m.sse" ] || python3 benches/gen_capture.py "$dir/capture-1m.sse" 182
[ -f "$dir/bad-1m.sse" ] ||
  awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "data: {\"a\":\n\n" }' >"$dir/bad-1m.sse"
ls -l "$dir"/store-1000/opencode.db "$dir"/db-1m/opencode.db "$dir"/*.sse

printf '<!DOCTYPE html><title>empty</title>\n' >"$dir/empty.html"
echo "chromium start-up on an empty page: $(load "$dir/empty.html") s"
measure store-1000 diagnose --format html "$dir/store-1000/opencode.db"
measure db-1m diagnose --format html "$dir/db-1m/opencode.db"
measure capture-1m diagnose --format html "$dir/capture-1m.sse"
measure capture-1m-compare replay --compare opencode opencode-fixed --format html "$dir/capture-1m.sse"
measure bad-1m diagnose --format html "$dir/bad-1m.sse"
measure bad-1m-compare replay --compare opencode opencode-fixed --format html "$dir/bad-1m.sse"
