#!/usr/bin/env bash
# The GitHub Action's check step (action.yml calls it; tests/action.rs runs it with fake GITHUB_*
# variables). Runs `rewind check` over the paths of the action's inputs, as:
#
# 1. `--format sarif` into the SARIF file (unless INPUT_SARIF is `false`), for code scanning;
# 2. `--format github`: one annotation per finding, and the Markdown summary appended to
#    $GITHUB_STEP_SUMMARY;
#
# then writes `exit-code` and `sarif-file` to $GITHUB_OUTPUT and exits with the status of the
# second run: 0 clean, 1 a finding at or above fail-on, 2 an input or the configuration could
# not be read.
#
# Inputs, from the environment (the action passes its inputs so, never into the script's text):
#   INPUT_PATHS      files and folders to check, one per line or separated by spaces (default .)
#   INPUT_CONFIG     a rewind.toml (default: the one found from the working folder up)
#   INPUT_FAIL_ON    error | warning | info (default: rewind.toml's, else error)
#   INPUT_ARGS       more arguments for `rewind check`, separated by spaces (e.g. --baseline FILE)
#   INPUT_SARIF      `false`: no SARIF file
#   INPUT_SARIF_FILE where to write it (default $RUNNER_TEMP/rewind.sarif)
#   REWIND           the rewind binary (default: rewind on PATH)
set -uo pipefail

rewind=${REWIND:-rewind}
read -r -d '' -a paths <<<"${INPUT_PATHS:-.}"
[ ${#paths[@]} -gt 0 ] || paths=(.)
read -r -d '' -a extra <<<"${INPUT_ARGS:-}"

args=(check)
[ -n "${INPUT_CONFIG:-}" ] && args+=(--config "$INPUT_CONFIG")
[ -n "${INPUT_FAIL_ON:-}" ] && args+=(--fail-on "$INPUT_FAIL_ON")
args+=("${extra[@]}")

output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "$1" >>"$GITHUB_OUTPUT"
  fi
}

sarif=""
if [ "${INPUT_SARIF:-true}" != "false" ]; then
  sarif=${INPUT_SARIF_FILE:-${RUNNER_TEMP:-/tmp}/rewind.sarif}
  # Its errors are the second run's: printed once, there.
  "$rewind" "${args[@]}" --format sarif --output-file "$sarif" -- "${paths[@]}" 2>/dev/null
  if [ $? -ge 2 ] || [ ! -s "$sarif" ]; then
    sarif=""
  fi
fi

"$rewind" "${args[@]}" --format github -- "${paths[@]}"
status=$?

output "exit-code=$status"
output "sarif-file=$sarif"
exit "$status"
