#!/usr/bin/env bash
# Compares what two builds of rewind print on every input of the project and the corpus:
# `diagnose` in JSON and in human form, `request --format json` and `sessions --format json`, with
# their exit codes. A change that should not change any output (a refactor) must print
# "0 differences".
#
#   bash scripts/same-output.sh BEFORE_BINARY AFTER_BINARY [DIR...]
#
# DIRs default to tests/fixtures, samples and the corpus (REWIND_CORPUS or ../shared/corpus).
set -uo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2
shift 2
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=(tests/fixtures samples "${REWIND_CORPUS:-../shared/corpus}")
fi
export NO_COLOR=1 COLUMNS=100
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
files=0 runs=0 diffs=0
run() {
  local bin=$1 dest=$2
  shift 2
  (cd "$out/work" && "$bin" "$@" >"$dest.out" 2>"$dest.err"; echo "$?" >"$dest.rc")
}
mkdir -p "$out/work"
while IFS= read -r -d '' f; do
  files=$((files + 1))
  abs=$(realpath "$f")
  for cmd in "diagnose --format json" "diagnose" "request --format json" "sessions --format json"; do
    # shellcheck disable=SC2086
    run "$before" "$out/a" $cmd "$abs"
    # shellcheck disable=SC2086
    run "$after" "$out/b" $cmd "$abs"
    runs=$((runs + 1))
    for s in out err rc; do
      if ! cmp -s "$out/a.$s" "$out/b.$s"; then
        diffs=$((diffs + 1))
        echo "differs: $cmd $f ($s)"
        diff <(head -c 4000 "$out/a.$s") <(head -c 4000 "$out/b.$s") | head -20
        break
      fi
    done
  done
done < <(find "${dirs[@]}" \( -type f -o -type d -name storage \) -print0 | sort -z)
echo "$files inputs, $runs runs each side: $diffs differences"
[ "$diffs" -eq 0 ]
