#!/usr/bin/env bash
# Agent-log throughput against peers on the same file, in one run: `rewind diagnose` vs `jq empty`
# (parse every object, keep nothing) and the typed-parse floor (`examples/agent_log_floor.rs`:
# serde_json into a struct of the few fields a diagnosis needs, the rest skipped), with the ratios
# between them; then rewind's peak memory on the wrapped log. The log is generated from the real
# issue-217 log of the shared corpus: COPIES copies with distinct ids, in two shapes — the
# solve.mjs wrapper's pretty-printed form and the agent's compact NDJSON (what jq can read).
#
#   bash benches/agent_log.sh [COPIES] [BIG_COPIES…]
#
# COPIES defaults to 100 (a 90 MB wrapped log, 44 MB compact). The three programs run in
# interleaved rounds (ROUNDS, default 7: jq, the floor and rewind back to back in each), so a
# change in the machine's load hits all three alike; the ratios are the median of the rounds'
# ratios, with their range. The compact log is also measured written on a single line, which is
# read piece by piece. A log of small records (COPIES x 2000 steps, each a step_start and a
# step_finish event, as a long run writes them) is measured against the same peers, in three
# rounds. Each BIG_COPIES (e.g. 300 1000: about 270 MB and 900 MB) adds a row to the table of
# peak memory as the log grows, for copies in sessions of their own, for all copies in one
# session, for one session whose last run dies of an error (which the diagnosis reports), and
# for one session whose last two messages share a tool call id (read a second time, keeping only
# the end);
# BIG_COPIES also adds logs of small records of 200,000 and 2,000,000 steps (about 100 MB and
# 1 GB), alone and with a call id used twice at the end. Those logs are deleted afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-100}
shift || true
bigs=("$@")
rounds=${ROUNDS:-7}
corpus=${REWIND_CORPUS:-../shared/corpus}
src=$corpus/agent-logs/issue-217-healthy.log
[ -f "$src" ] || { echo "needs $src (set REWIND_CORPUS)"; exit 2; }
cargo build --profile dist --quiet
cargo build --profile dist --quiet --example agent_log_floor
bin=target/dist/rewind
floor=target/dist/examples/agent_log_floor
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
# Written back before the timed runs, not during them.
sync

run_once() {  # prints "seconds peak-KiB" of one run of a command (output discarded), to the ms
  local tmp t0 t1 m
  tmp=$(mktemp)
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$tmp" "$@" > /dev/null 2>&1 || true
  t1=$(date +%s%N)
  # The last line: /usr/bin/time writes a line before it when the command exits non-zero.
  m=$(tail -n 1 "$tmp")
  rm -f "$tmp"
  awk -v a="$t0" -v b="$t1" -v m="$m" 'BEGIN{printf "%.3f %d\n", (b-a)/1e9, m}'
}
time_of() {  # prints "seconds peak-KiB" of a command, best of 5
  local best="" rss="" s m
  for _ in 1 2 3 4 5; do
    read -r s m <<< "$(run_once "$@")"
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; rss=$m; fi
  done
  echo "$best $rss"
}
line() {  # label, file, seconds, peak KiB
  local mb
  mb=$(awk -v b="$(stat -c %s "$2")" 'BEGIN{printf "%.1f", b/1048576}')
  awk -v l="$1" -v s="$3" -v m="$4" -v mb="$mb" 'BEGIN{
    printf "%-34s %6.3f s  %7.1f MB/s  peak %6.1f MiB\n", l, s, (s>0?mb/s:0), m/1024 }'
}
report() {  # label, file, command…; prints a line and sets $secs
  local label=$1 file=$2; shift 2
  local m
  read -r secs m <<< "$(time_of "$@")"
  line "$label" "$file" "$secs" "$m"
}
w=$dir/wrapped.log; c=$dir/compact.jsonl
echo "wrapped log: $(du -h "$w" | cut -f1), compact log: $(du -h "$c" | cut -f1), $(nproc) cores, $(jq --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "-- throughput on the compact log ($rounds interleaved rounds: best time, median ratio)"
rounds_out=$(mktemp)
for _ in $(seq "$rounds"); do
  read -r js jm <<< "$(run_once jq empty "$c")"
  read -r fs fm <<< "$(run_once "$floor" "$c")"
  read -r rs rm_ <<< "$(run_once "$bin" diagnose --format json "$c")"
  echo "$js $jm $fs $fm $rs $rm_" >> "$rounds_out"
done
best() {  # column of seconds, column of KiB: the best time and its peak
  sort -n -k"$1" "$rounds_out" | head -1 | awk -v s="$1" -v m="$2" '{print $s, $m}'
}
read -r s m <<< "$(best 1 2)"; line "jq empty" "$c" "$s" "$m"
read -r s m <<< "$(best 3 4)"; line "typed-parse floor (serde_json)" "$c" "$s" "$m"
read -r s m <<< "$(best 5 6)"; line "rewind diagnose" "$c" "$s" "$m"
ratios() {  # awk expression of a round's ratio: "median (rounds min-max)"
  awk "{print $1}" "$rounds_out" | sort -g | awk '{ r[NR] = $1 } END {
    printf "%.2f (rounds %.2f-%.2f)", (NR % 2 ? r[(NR+1)/2] : (r[NR/2] + r[NR/2+1]) / 2), r[1], r[NR] }'
}
echo "rewind vs jq empty: $(ratios '$1/$5') times as fast (target 10)"
echo "rewind vs floor:    $(ratios '$3/$5') of the floor's speed (target 0.60)"
rm -f "$rounds_out"
echo "-- small records: COPIES x 2000 steps of one session, each a step_start and a step_finish"
echo "   event of about 300 bytes (where the cost is per record, not per byte; 3 rounds)"
sm=$dir/steps.jsonl
steps_log() {  # file, steps
python3 - "$1" "$2" <<'PY'
import json, sys
out, steps = sys.argv[1], int(sys.argv[2])
with open(out, "w") as f:
    for i in range(steps):
        ids = {"sessionID": "ses_1", "messageID": f"msg_{i:010d}"}
        start = {"id": f"prt_{i:010d}a", **ids, "type": "step-start", "snapshot": "4b825dc6"}
        finish = {"id": f"prt_{i:010d}b", **ids, "type": "step-finish", "reason": "tool-calls",
                  "snapshot": "4b825dc6", "cost": 0.0125,
                  "tokens": {"input": 1200, "output": 35, "reasoning": 0,
                             "cache": {"read": 9000, "write": 0}}}
        for ty, part in (("step_start", start), ("step_finish", finish)):
            f.write(json.dumps({"type": ty, "timestamp": 1771057754652 + i, "sessionID": "ses_1",
                                "part": part}, separators=(",", ":")) + "\n")
PY
}
steps_log "$sm" "$((copies * 2000))"
sync
rounds_out=$(mktemp)
for _ in 1 2 3; do
  read -r js jm <<< "$(run_once jq empty "$sm")"
  read -r fs fm <<< "$(run_once "$floor" "$sm")"
  read -r rs rm_ <<< "$(run_once "$bin" diagnose --format json "$sm")"
  echo "$js $jm $fs $fm $rs $rm_" >> "$rounds_out"
done
read -r s m <<< "$(best 1 2)"; line "jq empty (steps)" "$sm" "$s" "$m"
read -r s m <<< "$(best 3 4)"; line "typed-parse floor (steps)" "$sm" "$s" "$m"
read -r s m <<< "$(best 5 6)"; line "rewind diagnose (steps)" "$sm" "$s" "$m"
echo "rewind vs jq empty: $(ratios '$1/$5') times as fast; vs floor: $(ratios '$3/$5')"
rm -f "$rounds_out" "$sm"
echo "-- the wrapped log (prefixes, pretty-printed objects, 64 KiB splits)"
report "rewind diagnose (wrapped)" "$w" "$bin" diagnose --format json "$w"
report "wc -l (wrapped)" "$w" wc -l "$w"
echo "-- the compact log written without newlines (every object on one line)"
o=$dir/one-line.log
tr -d '\n' < "$c" > "$o"
report "rewind diagnose (one line)" "$o" "$bin" diagnose --format json "$o"
rm -f "$o"
echo "-- the wrapped log's copies all in one session (its messages close, and are forgotten, one after the other)"
one=$dir/one-session.log
generate "$copies" "$one" "" one
report "rewind diagnose (one session)" "$one" "$bin" diagnose --format json "$one"
rm -f "$one"
peak() {  # file, what (a printf format, then its arguments): one run's time and peak memory
  local file=$1 what s m; shift
  # shellcheck disable=SC2059
  what=$(printf "$@")
  read -r s m <<< "$(run_once "$bin" diagnose --format json "$file")"
  awk -v w="$what" -v s="$s" -v m="$m" 'BEGIN{
    printf "rewind diagnose, %s %6.2f s  peak %6.1f MiB\n", w, s, m/1024 }'
}
size() { du -h "$1" | cut -f1; }
call_twice() {  # file, session: two last messages, a tool call of the same id in each
  local m
  for m in 1 2; do
    printf '{"type":"tool_use","timestamp":1771057799999,"sessionID":"%s","part":{"id":"prt_zzzz%s","sessionID":"%s","messageID":"msg_zzzz%s","type":"tool","callID":"call_twice","tool":"bash","state":{"status":"completed","input":{"command":"ls"},"output":"a","title":"ls","metadata":{},"time":{"start":1,"end":2}}}}\n' "$2" "$m" "$2" "$m" >> "$1"
  done
}
if [ "${#bigs[@]}" -gt 0 ]; then
  echo "-- peak memory as the wrapped log grows (sessions of their own / one session)"
  g=$dir/wrapped-big.log
  for n in "$copies" "${bigs[@]}"; do
    for shape in many one; do
      if [ "$n" = "$copies" ] && [ "$shape" = many ]; then f=$w; else generate "$n" "$g" "" "$shape"; f=$g; fi
      peak "$f" "%5s copies (%-5s) in %-4s session(s):" "$n" "$(size "$f")" "$shape"
    done
  done
  rm -f "$g"
  echo "-- one session with an error at the end (its last run dies: what rules report)"
  for n in "${bigs[@]}"; do
    generate "$n" "$g" "" one
    sid=$(grep -o -m1 '"sessionID": *"ses_[^"]*"' "$g" | grep -o 'ses_[^"]*')
    printf '{"type":"error","timestamp":1771057799999,"sessionID":"%s","error":{"name":"UnknownError","data":{"message":"The operation timed out."}}}\n' "$sid" >> "$g"
    peak "$g" "%5s copies (%-5s) and an error:     " "$n" "$(size "$g")"
  done
  echo "-- one session whose last two messages share a tool call id (read again, keeping the end)"
  for n in "${bigs[@]}"; do
    generate "$n" "$g" "" one
    sid=$(grep -o -m1 '"sessionID": *"ses_[^"]*"' "$g" | grep -o 'ses_[^"]*')
    call_twice "$g" "$sid"
    peak "$g" "%5s copies (%-5s), a call id twice: " "$n" "$(size "$g")"
  done
  rm -f "$g"
  echo "-- peak memory on small records as the log grows (steps of one session, 2 parts each)"
  for steps in 200000 2000000; do
    steps_log "$g" "$steps"
    peak "$g" "%7d steps (%-5s):                  " "$steps" "$(size "$g")"
    call_twice "$g" ses_1
    peak "$g" "%7d steps, a call id twice:        " "$steps"
  done
  rm -f "$g"
fi
