#!/usr/bin/env bash
# Time and peak memory on captures whose events cannot be decoded: both must grow linearly (time)
# or stay bounded (memory) with the number of bad events, like they do for healthy captures.
# Generates SSE captures of N events of the form `data: {"a":` (cut JSON) and runs
# `rewind diagnose` and `rewind replay --compare opencode opencode-fixed --format json` on each.
#
#   bash benches/bad_events.sh [N ...]        (default: 10000 100000 1000000)
#
# Captures are written under target/bench-bad/. On a shared 2-core machine:
#
#   events     diagnose               replay --compare --format json
#   10,000     0.06 s, 15 MB RSS      0.42 s, 43 MB RSS
#   100,000    0.46 s, 15 MB RSS      0.89 s, 43 MB RSS
#   1,000,000  3.78 s, 14 MB RSS      3.31 s, 43 MB RSS
#
# (before the per-kind cap and the indexed comparison, 10k/20k/40k bad events took 2.0/9.9/38 s
# and 75/125/237 MB for diagnose; 40k took 55 s and 1.3 GB for the comparison.)
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --profile dist --quiet
bin="$target/dist/rewind"
dir="$target/bench-bad"
mkdir -p "$dir"
measure() {
  local label=$1 n=$2
  shift 2
  local log="$dir/time-$label-$n.txt"
  /usr/bin/time -v "$@" >"$dir/out-$label-$n.txt" 2>"$log" || true
  local rss wall bytes
  rss=$(grep "Maximum resident" "$log" | awk '{print $NF}')
  wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}')
  bytes=$(wc -c <"$dir/out-$label-$n.txt")
  printf '%-9s %-8s wall %-8s peak RSS %7s KiB  output %9s bytes\n' "$n" "$label" "$wall" "$rss" "$bytes"
}
for n in "${@:-10000 100000 1000000}"; do
  for count in $n; do
    file="$dir/bad-$count.sse"
    [ -f "$file" ] || awk -v n="$count" 'BEGIN { for (i = 0; i < n; i++) printf "data: {\"a\":\n\n" }' >"$file"
    measure diagnose "$count" "$bin" diagnose --no-summary "$file"
    measure compare "$count" "$bin" replay --compare opencode opencode-fixed --format json "$file"
  done
done
