#!/usr/bin/env bash
# On a GPU machine, from the repository root, with optimas packed by scripts/device-pack.sh:
# the whole loop with the defaults (builtin backend: rules, then the tuning stage where the
# example's optimas.yml declares one) on each example, profiled live. With several GPUs the
# examples are spread over them, one at a time per GPU (CUDA_VISIBLE_DEVICES), so no two
# measurements share a GPU. Per example its --json summary (<ex>.json), its progress (<ex>.log)
# and exit code (exits.txt) go into $OUT/results.tgz, rewritten after each example so that a
# call stopped at its limit keeps what finished (the device returns only a few files per call:
# with one file per example, the later ones were left behind); the run folders without
# profiles' raw reports go into $OUT/runs.tgz at the end. Unpack results.tgz into a folder and
# python3 scripts/builtin-table.py FOLDER prints the table.
#   EXAMPLES (default: every example folder), RUN_SECONDS (limit per example, default 420),
#   TOTAL_SECONDS (all of it stops by then, default 570: the device's 10-minute calls),
#   RUN_ARGS (more arguments for optimas run, e.g. --no-tune or --tune-budget 4),
#   PROFILES (folders holding recorded profiles by example name, e.g. "tests/data/h200": an
#   example with one there imports it instead of profiling live; default none).
set -uo pipefail
OUT=${OUT:-/tmp/optimas-builtin-out}
DEADLINE=$(( $(date +%s) + ${TOTAL_SECONDS:-570} ))
W=/tmp/optimas-builtin
R=$W/results # what results.tgz holds
rm -rf "$W"; mkdir -p "$W" "$R" "$OUT"
save() { save_results "$R" "$OUT/results.tgz"; }
source "$(dirname "$0")/device-lib.sh"
device_env
examples=(${EXAMPLES:-$(for d in examples/*/; do [ -f "$d/optimas.yml" ] && basename "$d"; done)})
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$gpus" -gt 0 ] || { echo "no GPU" >&2; exit 125; }

{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version; nvcc --version;
  uname -a; optimas --version; } > "$R/environment.txt" 2>&1
save

# The examples of GPU $1: every ${gpus}th from the $1th.
on_gpu() {
  local gpu=$1
  for ((i = gpu; i < ${#examples[@]}; i += gpus)); do
    local ex=${examples[$i]} limit=${RUN_SECONDS:-420} left=$(( DEADLINE - $(date +%s) - 15 ))
    [ "$left" -lt "$limit" ] && limit=$left
    [ "$limit" -gt 30 ] || { echo "$ex no-time" >> "$R/exits.txt"; continue; }
    echo "[$(date +%T)] gpu $gpu: $ex (limit ${limit}s)" >> "$R/device.log"
    local import=()
    for p in ${PROFILES:-}; do
      [ -f "$p/$ex/manifest.json" ] && { import=(--import "$p/$ex"); break; }
    done
    CUDA_VISIBLE_DEVICES=$gpu timeout "$limit" \
      optimas run --app "examples/$ex" --runs-dir "$W/runs-$gpu" --json "${import[@]}" ${RUN_ARGS:-} > "$R/$ex.json" 2> "$R/$ex.log"
    echo "$ex $?" >> "$R/exits.txt"
    echo "[$(date +%T)] gpu $gpu: $ex done" >> "$R/device.log"
    save
  done
}
for ((g = 0; g < gpus; g++)); do on_gpu "$g" & done
wait
# The run folders: what the tables and the dashboard read, not the raw ncu reports.
tar czf "$OUT/runs.tgz" --exclude='*.ncu-rep' --exclude='*.csv.gz' --exclude='work' --exclude='program.out' \
  --exclude='*.bin' -C "$W" $(cd "$W" && ls -d runs-*) 2>/dev/null
du -sh "$OUT"/runs.tgz >> "$R/device.log"
save
