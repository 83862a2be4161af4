#!/usr/bin/env bash
# On a GPU machine, from the repository root, after scripts/device-pack.sh on the build machine:
# the kernel tracer's checks and figures (docs/profiling-cost.md says what came out).
#   1. the tracer on examples/heat (returns from main) and on a program that leaves by exit();
#   2. which launches ncu's --kernel-id invocation numbers select;
#   3. the tracer's overhead (bench/trace_overhead.sh) on 12,000 launches, normal and tiny grids;
#   4. what profiling costs: optimas profile (tracer + capped heavy pass), the old way (ncu times
#      every launch, every hot launch profiled) and ncu --set full over every kernel;
#   5. every example profiled with the tracer and the capped heavy pass (TRACE_EXAMPLES).
# Every step stops at a shared deadline (TRACE_SECONDS, default 540); results land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/optimas-trace-out}
DEADLINE=$(( $(date +%s) + ${TRACE_SECONDS:-540} ))
STEPS=${TRACE_STEPS:-smoke kernelid overhead examples cost}
source "$(dirname "$0")/device-lib.sh"
device_env
cupti=$CUPTI_DIR
TRACER=$PWD/.device/bin/liboptimas-trace.so
W=/tmp/optimas-trace
rm -rf "$W"; mkdir -p "$W/profiles" "$OUT"
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/device.log"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
step() { [[ " $STEPS " == *" $1 "* ]] && [ "$(left)" -gt 20 ]; }
limit() { local l=$(( $(left) - 15 )); [ "$l" -gt "$1" ] && l=$1; echo "$l"; }
secs() { local t0=$1; awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'; }

{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version; nvcc --version;
  uname -a; echo "cupti: $cupti"; ldd "$TRACER"; } > "$OUT/environment.txt" 2>&1
log "optimas: $(optimas --version 2>&1); cupti in $cupti"
nvcc -O3 -arch=sm_90 -lineinfo -o "$W/heat" examples/heat/main.cu || log "heat did not build"

if step smoke; then
  mkdir -p "$W/t-heat" "$W/t-exit"
  CUDA_INJECTION64_PATH=$TRACER OPTIMAS_TRACE_DIR=$W/t-heat "$W/heat" --nx 256 --ny 256 --steps 500 --out "$W/h.out" \
    > "$W/t-heat.txt" 2>&1
  log "heat small traced: exit $?; printed $(grep launches: "$W/t-heat.txt"); trace has $(grep -c '^L' "$W"/t-heat/trace-*.tsv) launch lines; end: $(grep '^E' "$W"/t-heat/trace-*.tsv)"
  cp "$W"/t-heat/trace-*.tsv "$OUT/heat-small.trace.tsv"
  cat > "$W/leave.cu" <<'CU'
#include <cstdio>
#include <cstdlib>
__global__ void tick(int* x) { atomicAdd(x, 1); }
static void leave() { std::exit(0); } // no synchronisation, no return from main
int main() {
  int* x;
  cudaMalloc(&x, sizeof(int));
  for (int i = 0; i < 100; ++i) tick<<<1, 32>>>(x);
  leave();
}
CU
  nvcc -O3 -arch=sm_90 -o "$W/leave" "$W/leave.cu" &&
    CUDA_INJECTION64_PATH=$TRACER OPTIMAS_TRACE_DIR=$W/t-exit "$W/leave" > "$W/t-exit.txt" 2>&1
  log "exit() program traced: $(grep -c '^L' "$W"/t-exit/trace-*.tsv) launch lines of 100; end: $(grep '^E' "$W"/t-exit/trace-*.tsv); stderr: $(head -c 300 "$W/t-exit.txt")"
  head -5 "$W"/t-heat/trace-*.tsv >> "$OUT/device.log"
fi

if step kernelid; then
  # a: 10 launches alternating between grids of 1 and 2 blocks; b: 10 launches; template c<N>.
  cat > "$W/kid.cu" <<'CU'
template <int N> __global__ void c(float* x) { x[threadIdx.x] += N; }
__global__ void a(float* x) { x[threadIdx.x] += 1; }
__global__ void b(float* x) { x[threadIdx.x] += 2; }
int main() {
  float* x;
  cudaMalloc(&x, 1024 * sizeof(float));
  for (int i = 0; i < 10; ++i) {
    a<<<1 + i % 2, 32>>>(x);
    b<<<1, 32>>>(x);
    if (i % 2) c<1><<<1, 32>>>(x); else c<2><<<1, 32>>>(x);
  }
  cudaDeviceSynchronize();
}
CU
  nvcc -O3 -arch=sm_90 -o "$W/kid" "$W/kid.cu"
  for filter in "::regex:^(a|b)\$:^(2|5)\$" "::regex:^(c)\$:^(2|5)\$"; do
    timeout "$(limit 60)" ncu --kernel-id "$filter" --metrics gpu__time_duration.sum -f -o "$W/kid" "$W/kid" > "$W/kid.log" 2>&1
    ncu -i "$W/kid.ncu-rep" --csv --page raw --print-units base > "$W/kid.csv" 2>&1
    log "kernel-id $filter profiled (ID, kernel, grid):"
    python3 - "$W/kid.csv" <<'PY' | tee -a "$OUT/device.log"
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 8]
h = rows[0]
for r in rows[2:]:
    print("   ", r[h.index("ID")], r[h.index("Kernel Name")], r[h.index("Grid Size")])
PY
  done
fi

if step overhead; then
  log "tracer overhead, heat default (512x512, 4000 steps: 12,000 launches)"
  timeout "$(limit 150)" bash bench/trace_overhead.sh "$TRACER" "${OVERHEAD_RUNS:-7}" -- "$W/heat" --nx 512 --ny 512 --steps 4000 \
    --out "$W/o.out" 2>&1 | tee -a "$OUT/device.log"
  log "tracer overhead, tiny grid (64x64, 4000 steps: 12,000 launches of a few microseconds)"
  timeout "$(limit 100)" bash bench/trace_overhead.sh "$TRACER" 7 -- "$W/heat" --nx 64 --ny 64 --steps 4000 \
    --out "$W/o.out" 2>&1 | tee -a "$OUT/device.log"
  log "tracer overhead, large grid (2048x2048, 3334 steps: 10,002 launches of about 30 microseconds)"
  timeout "$(limit 100)" bash bench/trace_overhead.sh "$TRACER" "${OVERHEAD_RUNS:-7}" -- "$W/heat" --nx 2048 --ny 2048 \
    --steps 3334 --out "$W/o.out" 2>&1 | tee -a "$OUT/device.log"
fi

if step ncucost; then
  # Where the heavy pass's time goes with many launches (heat small: 500 launches of each kernel).
  ( cd examples/heat && nvcc -O3 -arch=sm_90 -lineinfo -o "$W/heat-li" main.cu )
  H=("$W/heat-li" --nx 256 --ny 256 --steps 500 --out "$W/n.out")
  SEC=(--section SpeedOfLight --section SourceCounters --section WarpStateStats --import-source yes)
  n=0
  while IFS='|' read -r name args; do
    n=$((n + 1))
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout "$(limit 40)" ncu --clock-control none -f -o "$W/e$n" $args "${H[@]}" > "$W/e$n.log" 2>&1
    log "ncu cost $name: exit $? in $(secs "$t0") s, $(grep -c '==PROF== Profiling' "$W/e$n.log") profiled"
  done <<'EXP'
E1 kernel-id 1,250,500 of stencil_step, PC sections|--kernel-id ::regex:^(stencil_step)$:^(1|250|500)$ --section SpeedOfLight --section SourceCounters --section WarpStateStats --import-source yes
E2 kernel-id 1,250,500 of stencil_step, SpeedOfLight only|--kernel-id ::regex:^(stencil_step)$:^(1|250|500)$ --section SpeedOfLight
E3 kernel-id 1,250,500, PC sections, application replay|--kernel-id ::regex:^(stencil_step)$:^(1|250|500)$ --section SpeedOfLight --section SourceCounters --section WarpStateStats --replay-mode application
E4 first 3 of stencil_step, PC sections, --kill yes|-k regex:^(stencil_step)$ -c 3 --kill yes --section SpeedOfLight --section SourceCounters --section WarpStateStats
E5 kernel-id 1,2,3 of stencil_step, PC sections, no kill|--kernel-id ::regex:^(stencil_step)$:^(1|2|3)$ --section SpeedOfLight --section SourceCounters --section WarpStateStats
E6 kernel-id 1,250,500, PC sections, cache-control none|--kernel-id ::regex:^(stencil_step)$:^(1|250|500)$ --section SpeedOfLight --section SourceCounters --section WarpStateStats --cache-control none
E7 no section at all: timing metric on 1,250,500|--kernel-id ::regex:^(stencil_step)$:^(1|250|500)$ --metrics gpu__time_duration.sum
EXP
  log "tracer overhead by length (fixed and per-launch cost), check every step and every 100"
  for steps in 100 4000 16000; do
    for check in 1 100; do
      r=$(timeout "$(limit 60)" bash bench/trace_overhead.sh "$TRACER" 5 -- "$W/heat" --nx 256 --ny 256 --steps $steps --check $check --out "$W/o.out" 2>&1 | tr '\n' ' ')
      log "steps $steps check $check: $r"
    done
  done
fi

if step ncucost2; then
  # The heavy pass as optimas runs it, against the same without parts of it (heat small).
  ( cd examples/heat && nvcc -O3 -arch=sm_90 -lineinfo -o "$W/heat-li" main.cu )
  PROG="$W/heat-li --nx 256 --ny 256 --steps 500 --out $W/n.out"
  SEC="--section SpeedOfLight --section SpeedOfLight_RooflineChart --section SourceCounters --section WarpStateStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats"
  MET="--metrics smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_dadd_pred_on.sum,smsp__sass_thread_inst_executed_op_dmul_pred_on.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum,smsp__sass_thread_inst_executed_op_hadd_pred_on.sum,smsp__sass_thread_inst_executed_op_hmul_pred_on.sum,smsp__sass_thread_inst_executed_op_hfma_pred_on.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,smsp__inst_executed.sum,smsp__pcsamp_sample_count"
  K3="--kernel-id ::regex:^(residual_partial|boundary|stencil_step)\$:^(1|250|500)\$"
  K1="--kernel-id ::regex:^(stencil_step)\$:^(1|250|500)\$"
  n=10
  while IFS='|' read -r name args; do
    n=$((n + 1))
    t0=$(date +%s.%N)
    eval "timeout $(limit 45) ncu --clock-control none --import-source yes -f -o $W/e$n $args" > "$W/e$n.log" 2>&1
    log "ncu cost $name: exit $? in $(secs "$t0") s, $(grep -c '==PROF== Profiling' "$W/e$n.log") profiled"
  done <<'EXP'
E8 as optimas runs it (3 kernels, sections, metrics, sh)|--target-processes all $SEC $MET $K3 /bin/sh -c "$PROG"
E9 E8 without --metrics|--target-processes all $SEC $K3 /bin/sh -c "$PROG"
E10 E8 with one kernel name|--target-processes all $SEC $MET $K1 /bin/sh -c "$PROG"
E13 E8 without the shell, with --target-processes all|--target-processes all $SEC $MET $K3 $PROG
E14 E8 with the shell, without --target-processes all|$SEC $MET $K3 /bin/sh -c "$PROG"
EXP
  tail -5 "$W/e11.log" >> "$OUT/device.log"
fi

if step noop; then
  # The tracer's cost split: a library that CUDA injects and that does nothing, against the tracer.
  printf 'int InitializeInjection(void) { return 1; }\n' > "$W/noop.c"
  gcc -shared -fPIC -o "$W/libnoop.so" "$W/noop.c"
  for rep in 1 2 3; do
    for lib in "$W/libnoop.so" "$TRACER"; do
      r=$(timeout "$(limit 60)" bash bench/trace_overhead.sh "$lib" 11 -- "$W/heat" --nx 512 --ny 512 --steps 4000 --out "$W/o.out" 2>&1 | tr '\n' ' ')
      log "injected $(basename "$lib"), heat default, set $rep: $r"
    done
  done
fi

if step split; then
  # The tracer's cost split into its parts (bench/trace_variants.sh built .device/variants).
  # SPLIT_ARGS: heat's argument sets, separated by ';'.
  IFS=';' read -ra sets <<< "${SPLIT_ARGS:---nx 512 --ny 512 --steps 4000;--nx 512 --ny 512 --steps 4000 --check 4000;--nx 64 --ny 64 --steps 4000}"
  for args in "${sets[@]}"; do
    timeout "$(limit 150)" bash bench/trace_overhead_split.sh .device/variants "${SPLIT_RUNS:-9}" -- "$W/heat" $args \
      --out "$W/o.out" > "$W/split.txt" 2>&1
    log "tracer cost split, heat $args: exit $?"
    cat "$W/split.txt" | tee -a "$OUT/device.log"
  done
fi

if step gputest; then
  OPTIMAS=$(command -v optimas) OPTIMAS_SOURCE_DIR=$PWD timeout "$(limit 150)" bash tests/scenario/gpu_profile.sh > "$OUT/gpu_profile.txt" 2>&1
  log "gpu_profile.sh: exit $? ($(tail -1 "$OUT/gpu_profile.txt"))"
fi

if step aa; then
  # Measurement by trace end to end: an A/A run (a second build of the unchanged program).
  timeout "$(limit 120)" optimas run --app examples/heat --aa --runs 4 --measure-configs small --runs-dir "$W/runs" \
    --json > "$W/aa.json" 2> "$W/aa.txt"
  log "A/A heat (timing by trace): exit $?; $(grep -E 'measure|timing' "$W/aa.txt" | tail -3 | tr '\n' ' ')"
  python3 - "$W/runs" <<'PY' | tee -a "$OUT/device.log"
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/*/iter-*/*/result.json") + glob.glob(sys.argv[1] + "/*/*/result.json"):
    r = json.load(open(f))
    m = r.get("measurement", {})
    print("   ", f.split("/")[-2], r.get("status"), r.get("reason", "")[:160], "timing:", m.get("timing"))
for f in glob.glob(sys.argv[1] + "/*/**/measurements.jsonl", recursive=True)[:1]:
    for line in open(f).read().splitlines()[:4]:
        print("   ", line)
PY
fi

if step examples; then
  for ex in ${TRACE_EXAMPLES:-stream accuracy shmem sobol gather stencil spmv edges heat windows}; do
    [ -d "examples/$ex" ] || continue
    t0=$(date +%s.%N)
    timeout "$(limit 90)" optimas profile "examples/$ex" -i default -o "$W/profiles/$ex" \
      > "$W/profiles/$ex.summary.txt" 2> "$W/profiles/$ex.progress.txt"
    log "profile $ex -i default: exit $? in $(secs "$t0") s; $(grep -o 'hot kernels.*' "$W/profiles/$ex.progress.txt" | head -1)"
  done
fi
if step cost; then
  for cfg in default small; do
    t0=$(date +%s.%N)
    timeout "$(limit 90)" optimas profile examples/heat -i $cfg -o "$W/profiles/heat-$cfg" \
      > "$W/profiles/heat-$cfg.summary.txt" 2> "$W/profiles/heat-$cfg.progress.txt"
    log "optimas profile heat -i $cfg (tracer, --launch-cap 3): exit $? in $(secs "$t0") s; $(cat "$W/profiles/heat-$cfg/$cfg"/ncu.r*.log | grep -c '==PROF== Profiling') launches profiled"
  done
  t0=$(date +%s.%N)
  timeout "$(limit 120)" optimas profile examples/heat -i small --tracer none -o "$W/heat-old" \
    > /dev/null 2> "$W/heat-old.progress.txt"
  log "old timing pass, heat -i small (ncu times every launch; same capped heavy pass): exit $? in $(secs "$t0") s; $(grep -c '==PROF== Profiling' "$W/heat-old/small/timing.log" 2>/dev/null) timed by ncu; $(tail -1 "$W/heat-old.progress.txt")"
  ( cd examples/heat && nvcc -O3 -arch=sm_90 -lineinfo -o "$W/heat-lineinfo" main.cu )
  t0=$(date +%s.%N)
  budget=$(limit 120)
  timeout "$budget" ncu --target-processes all --set full --import-source yes --clock-control none -f -o "$W/full" \
    "$W/heat-lineinfo" --nx 256 --ny 256 --steps 500 --out "$W/f.out" > "$W/full.log" 2>&1
  rc=$?
  log "ncu --set full, heat small (1,500 launches): exit $rc after $(secs "$t0") s (limit $budget s), $(grep -c '==PROF== Profiling' "$W/full.log") launches profiled"
fi

tar czf "$OUT/profiles.tgz" --exclude='*.ncu-rep' -C "$W" profiles
log "done, $(left) s left"
ls -la "$OUT" | tee -a "$OUT/device.log"
