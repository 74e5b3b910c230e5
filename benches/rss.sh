#!/usr/bin/env bash
# Peak memory of `rewind diagnose` on generated Chat Completions captures of two sizes: memory must
# stay flat as the capture grows (the stream is framed, decoded and replayed as it is read).
# Usage: benches/rss.sh [SIZE_MB ...]   (default: 100 400). Captures are written under target/.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --profile dist --quiet
for mb in "${@:-100 400}"; do
  for size in $mb; do
    file="$target/bench-chat-${size}MB.sse"
    [ -f "$file" ] || python3 benches/gen_capture.py "$file" "$size"
    /usr/bin/time -v "$target/dist/rewind" diagnose --no-summary "$file" >/dev/null 2>"$target/rss-${size}.txt" || true
    rss=$(grep "Maximum resident" "$target/rss-${size}.txt" | awk '{print $NF}')
    wall=$(grep "Elapsed (wall clock)" "$target/rss-${size}.txt" | awk '{print $NF}')
    echo "${size} MB: peak RSS ${rss} KiB, wall ${wall}"
  done
done
