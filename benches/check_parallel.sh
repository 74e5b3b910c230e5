#!/usr/bin/env bash
# Measures how well `rewind check` uses the cores: 1,000 small generated recordings, checked once
# on one thread and once on all of them. Prints wall time, CPU time and CPU-seconds per
# wall-second (the target on 2 cores is >= 1.6).
#
#   bash benches/check_parallel.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}
cargo build --profile dist --quiet
bin=target/dist/rewind
dir=target/bench-check
rm -rf "$dir" && mkdir -p "$dir"
samples=(samples/*.log)
for i in $(seq 1 "$count"); do
  src=${samples[$((i % ${#samples[@]}))]}
  # A distinct session id per copy, so the recordings are not byte-identical.
  sed "s/ses_2/ses_$(printf '%04d' "$i")/g" "$src" > "$dir/rec-$(printf '%04d' "$i").log"
done
bytes=$(du -sb "$dir" | cut -f1)
echo "recordings: $count files, $((bytes / 1024)) KiB, $(nproc) cores"

runs=10
measure() {
  local label=$1; shift
  # Warm the page cache, then time $runs runs back to back (one run is too short to time alone).
  "$bin" check "$dir" --format jsonl "$@" > /dev/null || true
  local out
  out=$( { /usr/bin/time -f "%e %U %S %M" bash -c \
      'for _ in $(seq "$1"); do "$2" check "$3" --format jsonl "${@:4}" > /dev/null || true; done' \
      _ "$runs" "$bin" "$dir" "$@"; } 2>&1 | tail -1)
  read -r wall user sys rss <<< "$out"
  awk -v l="$label" -v n="$runs" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" 'BEGIN {
    cpu = u + s; ratio = (w > 0) ? cpu / w : 0;
    printf "%-10s %.3f s per run, cpu/wall %.2f, peak RSS %d MiB\n", l, w / n, ratio, m / 1024 }'
}
measure "-j 1" -j 1
measure "all cores"
