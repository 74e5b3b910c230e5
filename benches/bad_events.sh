#!/usr/bin/env bash
# Time and peak memory on captures whose events cannot be decoded: both must grow linearly (time)
# or stay bounded (memory) with the number of bad events, like they do for healthy captures.
# Generates SSE captures of N events of the form `data: {"a":` (cut JSON) and runs
# `rewind diagnose` and `rewind replay --compare opencode opencode-fixed --format json` on each.
#
#   bash benches/bad_events.sh [N ...]        (default: 10000 100000 1000000)
#
# Captures are written under target/bench-bad/.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
bin="$target/release/rewind"
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
