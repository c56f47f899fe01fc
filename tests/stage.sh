#!/usr/bin/env bash
# Run one stage of `make test`, print how long it took, and keep its exit code.
# usage: tests/stage.sh NAME COMMAND...
name="$1"; shift
start=$(date +%s)
printf '\n===== stage %s: start =====\n' "$name"
"$@"
rc=$?
elapsed=$(( $(date +%s) - start ))
status=OK; [ "$rc" -eq 0 ] || status="FAILED (exit $rc)"
printf '===== stage %s: %s in %ss =====\n' "$name" "$status" "$elapsed"
mkdir -p .cache
printf '%-14s %-22s %5ss\n' "$name" "$status" "$elapsed" >>.cache/stage-times.txt
exit "$rc"
