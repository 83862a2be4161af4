#!/usr/bin/env bash
# Issue #28 on the H200: the manual backend (you as the model) over 2 rounds on spmv and edges.
# Round 1's replies are written ahead into .scratch/manual/<ex>/reply-<hash>.md (the prompt of an
# imported profile is the same on any machine); each run measures round 1, re-profiles the best
# variant and stops at round 2's question (exit 4). Write round 2's reply beside its prompt, then
# call again: the runs continue with --resume. The run folders travel in .scratch/manual/runs
# (carry .scratch/manual; unpack $OUT/manual.tgz over .scratch/manual after each call). New runs
# skip the tuning stage (--no-tune): the question is the rounds. The order of EXAMPLES matters
# where a reply was written ahead: memory shows the store's accepted edits, so a run's first
# prompt depends on what the runs before it accepted.
#   EXAMPLES (default: spmv edges), TOTAL_SECONDS (default 560)
set -uo pipefail
source "$(dirname "$0")/device-lib.sh"
device_env
OUT=${OUT:-/tmp/optimas-manual-out}
M=$PWD/.scratch/manual
mkdir -p "$OUT" "$M/runs"
DEADLINE=$(( $(date +%s) + ${TOTAL_SECONDS:-560} ))
for ex in ${EXAMPLES:-spmv edges}; do
  left=$(( DEADLINE - $(date +%s) - 10 ))
  [ "$left" -gt 30 ] || { echo "$ex: no time left" | tee -a "$M/device.log"; continue; }
  id=$(cat "$M/$ex.id" 2>/dev/null)
  if [ -n "$id" ]; then
    args=(--resume "$id" --runs-dir "$M/runs")
  else
    args=(--app "examples/$ex" --import "tests/data/h200/$ex" --model manual --rounds 2 --no-tune --work-dir "$M/$ex"
          --runs-dir "$M/runs")
  fi
  echo "[$(date +%T)] $ex: optimas run ${args[*]}" | tee -a "$M/device.log"
  timeout --signal=INT "$left" optimas run "${args[@]}" > "$M/$ex.log" 2>&1
  rc=$?
  echo "$ex: exit $rc" | tee -a "$M/device.log"
  [ -z "$id" ] && grep -o 'continue with `optimas run --resume [0-9a-f]*' "$M/$ex.log" | awk '{print $NF}' > "$M/$ex.id"
  tail -4 "$M/$ex.log"
done
# What comes back: the run folders without the raw reports, the prompts and replies, the logs.
tar czf "$OUT/manual.tgz" --exclude='*.ncu-rep' --exclude='work' --exclude='program.out' --exclude='*.bin' \
  -C "$M" .
