#!/usr/bin/env bash
# Records the project's test data on a GPU machine (run there from the repository root, with
# an optimas binary built elsewhere in .device/bin and its shared libraries in .device/lib).
# Writes everything into $OUT (a few tarballs) and stops each step at a shared deadline.
# scripts/store-profile.sh turns a recorded profile into a tests/data/h200 folder.
set -uo pipefail
OUT=${OUT:-/tmp/optimas-record-out}
DEADLINE=$(( $(date +%s) + ${RECORD_SECONDS:-540} ))
# The kernel tracer beside optimas (liboptimas-trace.so) loads CUPTI from the CUDA install.
source "$(dirname "$0")/device-lib.sh"
device_env
REC=/tmp/optimas-record
rm -rf "$REC"; mkdir -p "$REC/profiles" "$OUT"
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/device.log"; }
left() { echo $(( DEADLINE - $(date +%s) )); }

{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version; nvcc --version; uname -a; } > "$REC/environment.txt" 2>&1
cp "$REC/environment.txt" "$OUT/environment.txt"
log "optimas: $(optimas --version 2>&1)"

# 1. The GPU scenario test (label gpu); SKIP_GPU_TEST=1 leaves it out.
[ -n "${SKIP_GPU_TEST:-}" ] || {
log "gpu scenario test"
OPTIMAS=$(command -v optimas) OPTIMAS_SOURCE_DIR=$PWD timeout $(( $(left) > 200 ? 200 : $(left) )) \
  bash tests/scenario/gpu_profile.sh > "$OUT/gpu_test.txt" 2>&1
log "gpu scenario test exit $?"
}

# 2. Metric dictionary for plain-language counter names.
[ -n "${SKIP_METRICS:-}" ] || {
ncu --query-metrics --csv > "$REC/query-metrics.csv" 2>&1
ncu --query-metrics --query-metrics-collection warpsampling --csv > "$REC/query-metrics-warpsampling.csv" 2>&1
ncu --query-metrics-mode suffix --metrics dram__bytes,smsp__pcsamp_warps_issue_stalled_long_scoreboard --csv > "$REC/query-metrics-suffix.csv" 2>&1
tar czf "$OUT/metrics.tgz" -C "$REC" query-metrics.csv query-metrics-warpsampling.csv query-metrics-suffix.csv environment.txt
}

# 3. Every example: two-pass profile of the input configurations, a few launches each.
# RECORD_EXAMPLES, RECORD_ARGS and RECORD_BUDGET change what is recorded.
for ex in ${RECORD_EXAMPLES:-stream accuracy shmem sobol gather stencil}; do
  budget=$(( $(left) - 40 ))
  [ "$budget" -gt 30 ] || { log "no time left for $ex"; continue; }
  [ "$budget" -gt "${RECORD_BUDGET:-150}" ] && budget=${RECORD_BUDGET:-150}
  log "profile $ex (limit ${budget}s)"
  timeout "$budget" optimas profile "examples/$ex" ${RECORD_ARGS:--i small -i default -c 6} -o "$REC/profiles/$ex" \
    > "$REC/profiles/$ex.summary.txt" 2> "$REC/profiles/$ex.progress.txt"
  log "profile $ex exit $?"
done
tar czf "$OUT/profiles.tgz" --exclude='*.ncu-rep' -C "$REC" profiles environment.txt
tar czf "$OUT/reports.tgz" -C "$REC" $(cd "$REC" && find profiles -name '*.ncu-rep' -size -4M | head -40)
log "done, $(left)s left"
ls -la "$OUT" | tee -a "$OUT/device.log"
