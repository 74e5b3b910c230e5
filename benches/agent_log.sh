#!/usr/bin/env bash
# Agent-log throughput against peers on the same file: `rewind diagnose` vs `jq` (parse every
# object and filter the tool updates) and `wc -l` (the I/O floor). The log is generated from the
# real issue-217 log of the shared corpus: COPIES copies with distinct ids, in two shapes — the
# solve.mjs wrapper's pretty-printed form and the agent's compact NDJSON (what jq can read).
#
#   bash benches/agent_log.sh [COPIES]        (default 100: about 94 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-100}
corpus=${REWIND_CORPUS:-../shared/corpus}
src=$corpus/agent-logs/issue-217-healthy.log
[ -f "$src" ] || { echo "needs $src (set REWIND_CORPUS)"; exit 2; }
cargo build --release --quiet
bin=target/release/rewind
dir=target/bench-log
mkdir -p "$dir"
python3 - "$src" "$copies" "$dir" <<'PY'
import json, re, sys
src, copies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(src, encoding="utf-8").read()
with open(f"{out}/wrapped.log", "w") as f:
    for i in range(copies):
        f.write(re.sub(r"(ses|msg|prt)_", lambda m: f"{m.group(1)}_{i:04d}", text))
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
with open(f"{out}/compact.jsonl", "w") as f:
    for i in range(copies):
        f.write(re.sub(r"(ses|msg|prt)_", lambda m: f"{m.group(1)}_{i:04d}", compact))
PY

time_of() {  # prints "seconds peak-KiB" of a command (output discarded), best of 3
  local best="" rss=""
  local tmp
  tmp=$(mktemp)
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$tmp" "$@" > /dev/null 2>&1 || true
    read -r s m < "$tmp"
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; rss=$m; fi
  done
  rm -f "$tmp"
  echo "$best $rss"
}
report() {  # label, file, command…
  local label=$1 file=$2; shift 2
  read -r s m <<< "$(time_of "$@")"
  local mb
  mb=$(awk -v b="$(stat -c %s "$file")" 'BEGIN{printf "%.1f", b/1048576}')
  awk -v l="$label" -v s="$s" -v m="$m" -v mb="$mb" 'BEGIN{
    printf "%-42s %6.2f s  %7.1f MB/s  peak %5.1f MiB\n", l, s, (s>0?mb/s:0), m/1024 }'
}
w=$dir/wrapped.log; c=$dir/compact.jsonl
echo "wrapped log: $(du -h "$w" | cut -f1), compact log: $(du -h "$c" | cut -f1), $(nproc) cores, $(jq --version)"
report "rewind diagnose (wrapped)" "$w" "$bin" diagnose --format json "$w"
report "rewind diagnose (compact)" "$c" "$bin" diagnose --format json "$c"
report "jq -c 'select(.type==\"tool_use\")' (compact)" "$c" jq -c 'select(.type=="tool_use")' "$c"
report "wc -l (wrapped)" "$w" wc -l "$w"
