#!/usr/bin/env bash
# Agent-log throughput against peers on the same file, in one run: `rewind diagnose` vs `jq empty`
# (parse every object, keep nothing) and the typed-parse floor (`examples/agent_log_floor.rs`:
# serde_json into a struct of the few fields a diagnosis needs, the rest skipped), with the ratios
# between them; then rewind's peak memory on the wrapped log. The log is generated from the real
# issue-217 log of the shared corpus: COPIES copies with distinct ids, in two shapes — the
# solve.mjs wrapper's pretty-printed form and the agent's compact NDJSON (what jq can read).
#
#   bash benches/agent_log.sh [COPIES] [BIG_COPIES]
#
# COPIES defaults to 100 (a 90 MB wrapped log, 44 MB compact). The compact log is also measured
# written on a single line, which is read piece by piece. With BIG_COPIES (e.g. 1000, about
# 1 GB), peak memory is also measured on a wrapped log that big, which is deleted afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-100}
big=${2:-}
corpus=${REWIND_CORPUS:-../shared/corpus}
src=$corpus/agent-logs/issue-217-healthy.log
[ -f "$src" ] || { echo "needs $src (set REWIND_CORPUS)"; exit 2; }
cargo build --release --quiet
cargo build --release --quiet --example agent_log_floor
bin=target/release/rewind
floor=target/release/examples/agent_log_floor
dir=target/bench-log
mkdir -p "$dir"
generate() {  # copies, wrapped file, compact file (or empty for none), "one" for one session
python3 - "$src" "$1" "$2" "$3" "${4:-}" <<'PY'
import json, re, sys
src, copies, wrapped, compact_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# "one": every copy's messages and parts in the same session (ids stay distinct).
ids = r"(msg|prt|call)_" if sys.argv[5] == "one" else r"(ses|msg|prt)_"
text = open(src, encoding="utf-8").read()
with open(wrapped, "w") as f:
    for i in range(copies):
        f.write(re.sub(ids, lambda m: f"{m.group(1)}_{i:04d}", text))
if not compact_out:
    sys.exit(0)
# The compact form: every complete top-level object of the log, one per line.
prefix = re.compile(r"^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] \[[A-Z]+\] ")
objs, cur = [], None
for line in text.split("\n"):
    line = prefix.sub("", line)
    if cur is None:
        if line.startswith("{"):
            cur = [line]
    else:
        cur.append(line)
    if cur is not None:
        try:
            objs.append(json.loads("\n".join(cur))); cur = None
        except ValueError:
            pass
compact = "\n".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in objs) + "\n"
with open(compact_out, "w") as f:
    for i in range(copies):
        f.write(re.sub(r"(ses|msg|prt)_", lambda m: f"{m.group(1)}_{i:04d}", compact))
PY
}
generate "$copies" "$dir/wrapped.log" "$dir/compact.jsonl"

time_of() {  # prints "seconds peak-KiB" of a command (output discarded), best of 5, to the ms
  local best="" rss=""
  local tmp t0 t1 s m
  tmp=$(mktemp)
  for _ in 1 2 3 4 5; do
    t0=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$tmp" "$@" > /dev/null 2>&1 || true
    t1=$(date +%s%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')
    read -r m < "$tmp"
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; rss=$m; fi
  done
  rm -f "$tmp"
  echo "$best $rss"
}
report() {  # label, file, command…; prints a line and sets $secs
  local label=$1 file=$2; shift 2
  local m
  read -r secs m <<< "$(time_of "$@")"
  local mb
  mb=$(awk -v b="$(stat -c %s "$file")" 'BEGIN{printf "%.1f", b/1048576}')
  awk -v l="$label" -v s="$secs" -v m="$m" -v mb="$mb" 'BEGIN{
    printf "%-34s %6.3f s  %7.1f MB/s  peak %6.1f MiB\n", l, s, (s>0?mb/s:0), m/1024 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
w=$dir/wrapped.log; c=$dir/compact.jsonl
echo "wrapped log: $(du -h "$w" | cut -f1), compact log: $(du -h "$c" | cut -f1), $(nproc) cores, $(jq --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "-- throughput on the compact log (best of 5)"
report "jq empty" "$c" jq empty "$c"; jq_s=$secs
report "typed-parse floor (serde_json)" "$c" "$floor" "$c"; floor_s=$secs
report "rewind diagnose" "$c" "$bin" diagnose --format json "$c"; rewind_s=$secs
echo "rewind vs jq empty: $(ratio "$jq_s" "$rewind_s")x faster (target 10x)"
echo "rewind vs floor:    $(ratio "$floor_s" "$rewind_s") of the floor's speed (target 0.60)"
echo "-- the wrapped log (prefixes, pretty-printed objects, 64 KiB splits)"
report "rewind diagnose (wrapped)" "$w" "$bin" diagnose --format json "$w"
report "wc -l (wrapped)" "$w" wc -l "$w"
echo "-- the compact log written without newlines (every object on one line)"
o=$dir/one-line.log
tr -d '\n' < "$c" > "$o"
report "rewind diagnose (one line)" "$o" "$bin" diagnose --format json "$o"
rm -f "$o"
echo "-- the wrapped log's copies all in one session (the model keeps every part of a session)"
one=$dir/one-session.log
generate "$copies" "$one" "" one
report "rewind diagnose (one session)" "$one" "$bin" diagnose --format json "$one"
rm -f "$one"
if [ -n "$big" ]; then
  echo "-- peak memory as the wrapped log grows"
  g=$dir/wrapped-big.log
  generate "$big" "$g" ""
  for f in "$w" "$g"; do
    /usr/bin/time -f "%e %M" -o "$dir/rss.txt" "$bin" diagnose --format json "$f" > /dev/null 2>&1 || true
    read -r s m < "$dir/rss.txt"
    awk -v n="$(du -h "$f" | cut -f1)" -v s="$s" -v m="$m" 'BEGIN{
      printf "rewind diagnose, %-5s wrapped log: %6.2f s  peak %6.1f MiB\n", n, s, m/1024 }'
  done
  rm -f "$g" "$dir/rss.txt"
fi
