#!/usr/bin/env bash
# A heavy user's Claude Code home: FILES transcripts under `projects/` (about 154 MB for the
# default 500), made from one real healthy session with tool calls (the corpus's `tool` session,
# or `tests/fixtures/transcripts/claude-healthy-tool.jsonl` without the corpus) chained a varying
# number of times with fresh ids. Then `rewind check` on the folder (a full diagnosis of every
# transcript) against ccusage's native build (`ccusage daily --json`, which only sums usage),
# installed from npm into target/bench-ccusage, interleaved: ROUNDS rounds of one run each, with
# the median wall time and the peak memory of each tool, and the ratio.
#
#   bash benches/claude_home.sh [FILES] [ROUNDS]
#
# CCUSAGE=path/to/ccusage uses that binary instead of installing one.
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-500}
rounds=${2:-5}
corpus=${REWIND_CORPUS:-../shared/corpus}
src=$(ls "$corpus"/transcripts/claude-code/tool/*-*-*-*-*.jsonl 2>/dev/null | head -1 || true)
[ -f "$src" ] || src=tests/fixtures/transcripts/claude-healthy-tool.jsonl
dir=target/bench-claude-home
home=$dir/home/.claude
if [ ! -f "$dir/files-$files" ]; then
  rm -rf "$dir/home" && mkdir -p "$home/projects"
  python3 - "$src" "$files" "$home/projects" <<'PY'
import os, random, sys, uuid
sys.path.insert(0, "benches")
from claude_chain import chain, records
src, files, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = [r for r in records(src) if r.get("type") not in ("last-prompt", "queue-operation")]
rnd = random.Random(7)
for n in range(files):
    project = os.path.join(root, f"-home-dev-project-{n % 40:02d}")
    os.makedirs(project, exist_ok=True)
    session = str(uuid.UUID(int=rnd.getrandbits(128)))
    # 141 MB over 500 files: about 26 copies each, from 4 to 48. Compact JSON, as Claude Code
    # writes it (ccusage's native build skips spaced JSON).
    with open(os.path.join(project, session + ".jsonl"), "w") as f:
        chain(lines, rnd.randint(4, 48), f, session=session, rnd=rnd, tag=f"_{n}", compact=True)
PY
  touch "$dir/files-$files"
fi
mb=$(du -sm "$home/projects" | cut -f1)
echo "home: $files transcripts, $mb MB (from $(basename "$src"))"

cargo build --release --quiet
rewind=target/release/rewind
if [ -z "${CCUSAGE:-}" ]; then
  tools=target/bench-ccusage
  if [ ! -f "$tools/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage" ]; then
    mkdir -p "$tools"
    # 20.0.24 is the newest release with a native linux-x64 build.
    (cd "$tools" && npm install --silent --no-audit --no-fund ccusage@20.0.24 > /dev/null 2>&1) || true
  fi
  CCUSAGE=$(ls "$tools"/node_modules/@ccusage/ccusage-*/bin/ccusage 2>/dev/null | head -1 || true)
  # npm leaves the native binary without its execute bit (ccusage's launcher sets it).
  [ -n "$CCUSAGE" ] && chmod +x "$CCUSAGE"
fi
have_ccusage=1
[ -n "$CCUSAGE" ] && [ -x "$CCUSAGE" ] || { have_ccusage=0; echo "ccusage: not installed (npm unreachable?): rewind alone"; }

one() {  # one run: prints "seconds peak-KiB"
  local t
  t=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$t" "$@" > /dev/null 2>&1 || true
  cat "$t"; rm -f "$t"
}
r_times=(); r_peaks=(); c_times=(); c_peaks=()
# Warm the page cache with each tool once.
one "$rewind" check "$home" --format jsonl > /dev/null
[ "$have_ccusage" = 1 ] && CLAUDE_CONFIG_DIR=$PWD/$home one "$CCUSAGE" daily --json --offline > /dev/null
for _ in $(seq "$rounds"); do
  read -r t m < <(one "$rewind" check "$home" --format jsonl)
  r_times+=("$t"); r_peaks+=("$m")
  if [ "$have_ccusage" = 1 ]; then
    read -r t m < <(CLAUDE_CONFIG_DIR=$PWD/$home one "$CCUSAGE" daily --json --offline)
    c_times+=("$t"); c_peaks+=("$m")
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }
rt=$(median "${r_times[@]}"); rm_=$(maxof "${r_peaks[@]}")
printf '%-34s %8s s  %6d MiB peak\n' "rewind check (full diagnosis)" "$rt" $((rm_ / 1024))
if [ "$have_ccusage" = 1 ]; then
  ct=$(median "${c_times[@]}"); cm=$(maxof "${c_peaks[@]}")
  printf '%-34s %8s s  %6d MiB peak\n' "ccusage $("$CCUSAGE" --version 2>/dev/null | head -1) daily --json" "$ct" $((cm / 1024))
  awk -v r="$rt" -v c="$ct" 'BEGIN{ if (r > 0) printf "rewind is %.2fx as fast as ccusage (median of %d interleaved rounds)\n", c / r, '"$rounds"' }'
fi
