#!/usr/bin/env bash
# Instructions a diagnosis executes, counted by valgrind (cachegrind, no cache simulation): a
# measure of CPU work that does not move with the machine's load, for comparing two builds where
# timings on a shared machine differ by more than the change. Threads run one at a time under
# valgrind, so this counts work, not wall time; the counts of one build vary by about 0.05%
# from run to run.
#
#   bash benches/instructions.sh LOG [BINARY…]
#
# LOG: any input `rewind diagnose` reads (e.g. target/bench-log/compact.jsonl from
# benches/agent_log.sh, or `head -n 20000` of it: valgrind runs about 50 times slower).
# BINARY defaults to target/dist/rewind (built first).
set -euo pipefail
cd "$(dirname "$0")/.."
log=${1:?usage: bash benches/instructions.sh LOG [BINARY…]}
shift
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 2; }
if [ $# -eq 0 ]; then
  cargo build --profile dist --quiet
  set -- target/dist/rewind
fi
printf '%s: %s bytes\n' "$log" "$(wc -c < "$log")"
for bin in "$@"; do
  # A diagnosis with findings exits 1: the count is read all the same.
  refs=$( (valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$bin" diagnose "$log" 2>&1 >/dev/null || true) | sed -n 's/.*I *refs: *//p')
  printf '%-40s %15s instructions\n' "$bin" "$refs"
done
