#!/usr/bin/env bash
# Two builds of rewind side by side on the inputs heavy users have, in one run: `rewind diagnose`
# of a wrapped agent log (90 MB), the same log compact (44 MB), a Chat Completions SSE capture
# (100 MB), an OpenCode database (PARTS parts, default 200,000) and a Claude Code transcript
# (95 MB). The builds run in interleaved rounds (ROUNDS, default 5: before, after, back to back),
# so a change in the machine's load hits both alike; the table gives each one's median wall time
# and peak memory, and the ratio after/before (below 1: faster).
#
#   bash benches/compare_builds.sh BEFORE_BINARY AFTER_BINARY
#
# Build both with the same profile (`cargo build --profile dist`; a checkout from before the dist
# profile existed builds the same with `--release`). Needs the corpus (REWIND_CORPUS), sqlite3,
# and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1") after=$(realpath "$2")
rounds=${ROUNDS:-5}
corpus=${REWIND_CORPUS:-../shared/corpus}
dir=target/bench-compare
mkdir -p "$dir"

# Inputs, generated once.
if [ ! -f "$dir/wrapped.log" ]; then
  python3 - "$corpus/agent-logs/issue-217-healthy.log" "$dir/wrapped.log" "$dir/compact.log" <<'PY'
import json, re, sys
src, wrapped, compact = sys.argv[1:]
text = open(src, encoding="utf-8").read()
copies = [re.sub(r"(ses|msg|prt)_", lambda m: f"{m.group(1)}_{i:04d}", text) for i in range(100)]
open(wrapped, "w").write("".join(copies))
prefix = re.compile(r"^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] \[[A-Z]+\] ")
with open(compact, "w") as out:
    for copy in copies:
        cur = None
        for line in copy.split("\n"):
            line = prefix.sub("", line)
            if cur is None:
                if line.startswith("{"):
                    cur = [line]
            else:
                cur.append(line)
            if cur is not None:
                try:
                    out.write(json.dumps(json.loads("\n".join(cur)), separators=(",", ":")) + "\n")
                    cur = None
                except json.JSONDecodeError:
                    pass
PY
fi
[ -f "$dir/capture.sse" ] || python3 benches/gen_capture.py "$dir/capture.sse" 100 > /dev/null
[ -f "$dir/db/opencode.db" ] || GENERATE_ONLY=1 WORK="$dir/db" PARTS=${PARTS:-200000} SESSIONS=200 \
  bash benches/opencode_db.sh > /dev/null
[ -f target/bench-transcript/big.jsonl ] || GENERATE_ONLY=1 bash benches/transcript.sh > /dev/null

run() {  # binary, input → "seconds peak-KiB"
  local tmp
  tmp=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$tmp" "$1" diagnose --format json "$2" > /dev/null 2>&1 || true
  cat "$tmp"
  rm -f "$tmp"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-22s %10s %10s %8s %12s %12s\n' input "before s" "after s" ratio "before KiB" "after KiB"
for input in "$dir/wrapped.log" "$dir/compact.log" "$dir/capture.sse" "$dir/db/opencode.db" \
  target/bench-transcript/big.jsonl; do
  : > "$dir/b.txt"
  : > "$dir/a.txt"
  for _ in $(seq "$rounds"); do
    run "$before" "$input" >> "$dir/b.txt"
    run "$after" "$input" >> "$dir/a.txt"
  done
  bs=$(cut -d' ' -f1 "$dir/b.txt" | median) as=$(cut -d' ' -f1 "$dir/a.txt" | median)
  bm=$(cut -d' ' -f2 "$dir/b.txt" | median) am=$(cut -d' ' -f2 "$dir/a.txt" | median)
  printf '%-22s %10s %10s %8s %12s %12s\n' "$(basename "$input")" "$bs" "$as" \
    "$(awk -v a="$as" -v b="$bs" 'BEGIN{printf "%.3f", a/b}')" "$bm" "$am"
done
