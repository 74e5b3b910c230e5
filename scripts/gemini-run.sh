#!/bin/bash
# gemini-run.sh SCENARIO PORT HOMEDIR OUTDIR -- gemini args...
# Runs Gemini CLI offline against scripts/gemini-mock.py on 127.0.0.1:PORT, with HOME=HOMEDIR.
# Environment: GEMINI = the client's entry (default: gemini on PATH); WORK = the folder the client
# runs in (default: HOMEDIR/work); KILL_AFTER = seconds after which the client is killed (SIGKILL).
HERE=$(cd "$(dirname "$0")" && pwd)
SC=$1; PORT=$2; H=$3; OUT=$4; shift 4; [ "$1" = "--" ] && shift
WORK=${WORK:-$H/work}; GEMINI=${GEMINI:-gemini}
mkdir -p "$H/.gemini" "$OUT" "$WORK"
[ -f "$H/.gemini/settings.json" ] || cat > "$H/.gemini/settings.json" <<'J'
{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},"general":{"disableAutoUpdate":true},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}
J
python3 "$HERE/gemini-mock.py" --port "$PORT" --scenario "$SC" --outdir "$OUT" 2>>"$OUT/mock.stderr" &
MOCK=$!
sleep 0.5
cd "$WORK" || exit 2
HOME=$H GEMINI_API_KEY=dummy GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$PORT \
  $GEMINI "$@" > "$OUT/client.stdout" 2> "$OUT/client.stderr" < /dev/null &
CL=$!
if [ -n "$KILL_AFTER" ]; then
  sleep "$KILL_AFTER"
  desc() { for c in $(pgrep -P "$1"); do echo "$c"; desc "$c"; done; }
  D=$(desc $CL)
  kill -9 $CL; echo "SIGKILL client pid $CL" >> "$OUT/kill.log"
  for c in $D; do kill -9 "$c" 2>/dev/null && echo "SIGKILL descendant $c" >> "$OUT/kill.log"; done
fi
wait $CL; echo "client exit: $?" > "$OUT/client.rc"
kill $MOCK
