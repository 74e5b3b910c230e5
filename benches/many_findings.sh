#!/usr/bin/env bash
# Time and peak memory when one file has a great many findings: an agent log of N steps that
# each start and never finish (N `step-unclosed` errors, one per step, each with its snippet and
# fingerprint), diagnosed with `--format json`, `--format sarif` and with the human printer. Time must grow
# linearly with N; memory grows with N too, since a file's findings are printed together (the
# JSON document lists them after the files' summary, and the human report orders them by cause).
#
#   bash benches/many_findings.sh [N ...]        (default: 10000 100000 1000000)
#
# Logs are written under target/bench-findings/ (1M steps: 175 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --profile dist --quiet
bin="$target/dist/rewind"
dir="$target/bench-findings"
mkdir -p "$dir"
for n in ${@:-10000 100000 1000000}; do
  file="$dir/unclosed-$n.log"
  [ -f "$file" ] || awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) {
    s = sprintf("ses_%06d", int(i / 3000))
    printf "{\"type\":\"step_start\",\"timestamp\":%d,\"sessionID\":\"%s\",\"part\":{\"id\":\"prt_%08d\",\"sessionID\":\"%s\",\"messageID\":\"msg_%08d\",\"type\":\"step-start\"}}\n", i, s, i, s, i
  } }' >"$file"
  for format in json sarif human; do
    /usr/bin/time -f "%e %M" -o "$dir/time.txt" "$bin" diagnose --format "$format" "$file" >/dev/null 2>&1 || true
    # The last line: /usr/bin/time writes "Command exited with non-zero status 1" before it.
    read -r wall rss < <(tail -n 1 "$dir/time.txt")
    awk -v n="$n" -v f="$format" -v w="$wall" -v m="$rss" 'BEGIN {
      printf "%9d findings  %-5s  %6.2f s  %8.0f findings/s  peak %7.1f MiB  (%.1f KiB a finding)\n",
        n, f, w, (w > 0 ? n / w : 0), m / 1024, m / n }'
  done
done
