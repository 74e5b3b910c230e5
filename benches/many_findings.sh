#!/usr/bin/env bash
# Time and peak memory when one file has a great many findings: an agent log of one session whose
# one step starts N tools that are left `running` (N alike `tool-never-finished` errors, each with
# its snippet and fingerprint), diagnosed with `--format json`, `--format sarif`, `--format html`
# and with the human printer. Time must grow linearly with N. The human and HTML outputs show the
# first few findings of a group of alike ones and count the rest, so their size stays flat; JSON
# and SARIF list every finding and write each as it comes (into a spool copied into place at the
# end), so memory grows only with what a diagnosis holds of the findings themselves.
#
#   bash benches/many_findings.sh [N ...]        (default: 100000 200000 500000)
#
# Logs are written under target/bench-findings/ (500,000 tools: 138 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --profile dist --quiet
bin="$target/dist/rewind"
dir="$target/bench-findings"
mkdir -p "$dir"
for n in ${@:-100000 200000 500000}; do
  file="$dir/running-$n.log"
  [ -f "$file" ] || awk -v n="$n" 'BEGIN { s = "ses_000001"; m = "msg_00000001"
    printf "{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"%s\",\"part\":{\"id\":\"prt_start\",\"sessionID\":\"%s\",\"messageID\":\"%s\",\"type\":\"step-start\"}}\n", s, s, m
    for (i = 0; i < n; i++)
      printf "{\"type\":\"tool_use\",\"timestamp\":%d,\"sessionID\":\"%s\",\"part\":{\"id\":\"prt_%08d\",\"sessionID\":\"%s\",\"messageID\":\"%s\",\"type\":\"tool\",\"callID\":\"call_%08d\",\"tool\":\"bash\",\"state\":{\"status\":\"running\",\"input\":{\"command\":\"ls\"},\"time\":{\"start\":%d}}}}\n", i + 2, s, i, s, m, i, i + 2
  }' >"$file"
  for format in json sarif html human; do
    /usr/bin/time -f "%e %M" -o "$dir/time.txt" "$bin" diagnose --format "$format" "$file" >"$dir/out.txt" 2>&1 || true
    # The last line: /usr/bin/time writes "Command exited with non-zero status 1" before it.
    read -r wall rss < <(tail -n 1 "$dir/time.txt")
    size=$(stat -c %s "$dir/out.txt")
    awk -v n="$n" -v f="$format" -v w="$wall" -v m="$rss" -v s="$size" 'BEGIN {
      printf "%9d findings  %-5s  %6.2f s  peak %7.1f MiB  (%.1f KiB a finding)  output %9.1f MiB\n",
        n, f, w, m / 1024, m / n, s / 1048576 }'
  done
  rm -f "$dir/out.txt"
done
