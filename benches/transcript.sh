#!/usr/bin/env bash
# A large Claude Code transcript: the corpus's `tool` session chained COPIES times (fresh uuids,
# message and tool ids per copy, each copy's first record parented to the previous copy's last),
# about 95 MB for the default 8,229 copies; then `rewind diagnose` on it against `jq empty`
# (best of 3 each), with rewind's peak memory.
#
#   bash benches/transcript.sh [COPIES]
#
# GENERATE_ONLY=1 stops after writing the transcript (target/bench-transcript/big.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-8229}
corpus=${REWIND_CORPUS:-../shared/corpus}
src=$(ls "$corpus"/transcripts/claude-code/tool/*-*-*-*-*.jsonl | head -1)
[ -f "$src" ] || { echo "needs the corpus's claude-code/tool transcript (set REWIND_CORPUS)"; exit 2; }
dir=target/bench-transcript
mkdir -p "$dir"
out=$dir/big.jsonl
python3 benches/claude_chain.py "$src" "$out" "$copies"
if [ -n "${GENERATE_ONLY:-}" ]; then echo "$out"; exit 0; fi
cargo build --profile dist --quiet
mb=$(awk -v b="$(stat -c %s "$out")" 'BEGIN{printf "%.1f", b/1048576}')
best() {  # best of 3: "seconds peak-KiB"
  local b="" m="" t tmp
  tmp=$(mktemp)
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$tmp" "$@" > /dev/null 2>&1 || true
    t=$(tail -1 "$tmp")
    if [ -z "$b" ] || awk -v a="${t% *}" -v c="$b" 'BEGIN{exit !(a<c)}'; then b=${t% *}; m=${t#* }; fi
  done
  rm -f "$tmp"
  echo "$b $m"
}
read -r rs rm <<< "$(best target/dist/rewind diagnose "$out")"
echo "transcript: $mb MiB, $(wc -l < "$out") records"
echo "rewind diagnose: $rs s, peak $((rm / 1024)) MiB"
if command -v jq >/dev/null; then
  read -r js _ <<< "$(best jq empty "$out")"
  echo "jq empty: $js s (rewind $(awk -v a="$js" -v b="$rs" 'BEGIN{printf "%.1f", a/b}')x faster)"
fi
