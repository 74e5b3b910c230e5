#!/usr/bin/env bash
# Compares the HTML pages two builds of rewind write on every input of the project and the corpus:
# per input `diagnose --format html`, `replay --format html` and `replay --compare … --format html`
# (two pairs of processors), then `check --format html` over each folder at once (pages of many
# units, with the summary's links) and over them all twenty times (past the page budget: compact
# units), and on a generated log of many sessions (past a section's budget). A run is the same
# when its exit code and standard error are the same and its pages are the same bytes, or the same
# page by scripts/html_equiv.py (one token stream once entities are decoded and the line breaks
# between tags left out). A change that should not change the page (a refactor) must print
# "0 differences".
#
#   bash scripts/same-html.sh BEFORE_BINARY AFTER_BINARY [DIR...]
#
# DIRs default to tests/fixtures, samples and the corpus (REWIND_CORPUS or ../shared/corpus).
set -uo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1") after=$(realpath "$2")
shift 2
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=(tests/fixtures samples "${REWIND_CORPUS:-../shared/corpus}")
fi
equiv=$PWD/scripts/html_equiv.py
export NO_COLOR=1 COLUMNS=100
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
files=0 runs=0 same=0 equivalent=0 diffs=0
run() {
  local bin=$1 dest=$2
  shift 2
  (cd "$out/work" && "$bin" "$@" >"$dest.out" 2>"$dest.err"; echo "$?" >"$dest.rc")
}
# Runs one command with both builds and counts the outcome.
compare() {
  run "$before" "$out/a" "$@"
  run "$after" "$out/b" "$@"
  runs=$((runs + 1))
  for s in err rc; do
    if ! cmp -s "$out/a.$s" "$out/b.$s"; then
      diffs=$((diffs + 1))
      echo "differs: $* ($s)"
      diff <(head -c 4000 "$out/a.$s") <(head -c 4000 "$out/b.$s") | head -20
      return
    fi
  done
  if cmp -s "$out/a.out" "$out/b.out"; then
    same=$((same + 1))
  elif python3 "$equiv" "$out/a.out" "$out/b.out" >"$out/why"; then
    equivalent=$((equivalent + 1))
  else
    diffs=$((diffs + 1))
    echo "differs: $* (page)"
    head -c 2000 "$out/why"
  fi
}
mkdir -p "$out/work"
while IFS= read -r -d '' f; do
  files=$((files + 1))
  abs=$(realpath "$f")
  compare diagnose --format html "$abs"
  compare replay --format html "$abs"
  compare replay --compare opencode opencode-fixed --format html "$abs"
  compare replay --compare agent-0.8 tanstack --format html "$abs"
done < <(find "${dirs[@]}" \( -type f -o -type d -name storage \) -print0 | sort -z)
abs_dirs=()
for d in "${dirs[@]}"; do
  abs_dirs+=("$(realpath "$d")")
  compare check --format html "$(realpath "$d")"
done
# The folders twenty times over: a page past its budget (16 MiB), whose last units are compact.
many=()
for _ in $(seq 20); do many+=("${abs_dirs[@]}"); done
compare check --format html "${many[@]}"
# A log of 20,000 failing sessions: one unit whose section passes the budget (its last sessions
# listed one finding a line).
python3 - "$out/many.log" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(20000):
        s = f"ses_{i:08}"
        f.write(
            f'{{"type":"step_start","timestamp":1,"sessionID":"{s}","part":{{"id":"prt_{i:08}",'
            f'"sessionID":"{s}","messageID":"msg_{i:08}","type":"step-start"}}}}\n'
            f'{{"type":"error","timestamp":2,"sessionID":"{s}","error":{{"name":"UnknownError",'
            f'"data":{{"message":"boom {i}"}}}}}}\n'
        )
PY
compare diagnose --format html "$out/many.log"
echo "$files inputs, $runs runs each side: $same identical, $equivalent equivalent, $diffs differences"
[ "$diffs" -eq 0 ]
