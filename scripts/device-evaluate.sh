#!/usr/bin/env bash
# On a GPU machine, from the repository root, with an optimas binary built elsewhere in
# .device/bin and its shared libraries in .device/lib (scripts/device-record.sh does the same):
#   1. records two-pass profiles of the real-project examples (spmv: make; edges: CMake);
#   2. runs the whole loop on each with a hand-written honest edit through the manual backend
#      (run, exit 4, the reply saved where Optimas asks for it, --resume);
#   3. runs the GPU loop test (builtin backend) on them, from the profiles just recorded;
#   4. A/A runs (a second build of the unchanged baseline against it) for the noise on the H200.
# Every step stops at a shared deadline; everything lands in $OUT as a few files.
#   DEVICE_STEPS (default "record manual builtin aa"), EVAL_EXAMPLES (spmv edges),
#   AA_EXAMPLES (edges spmv stream), EVAL_SECONDS (540).
set -uo pipefail
OUT=${OUT:-/tmp/optimas-evaluate-out}
DEADLINE=$(( $(date +%s) + ${EVAL_SECONDS:-540} ))
export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PWD/.device/bin:$PATH"
W=/tmp/optimas-evaluate
rm -rf "$W"; mkdir -p "$W/h200" "$OUT"
RUNS="$W/runs"
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/device.log"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
step() { [[ " ${DEVICE_STEPS:-record manual builtin aa} " == *" $1 "* ]]; }
# Re-profiling is left out of these runs (device time); the loop tests cover it.
NO_REPROFILE=(--ncu /nonexistent/ncu)

{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version; nvcc --version;
  cmake --version; uname -a; } > "$OUT/environment.txt" 2>&1
log "optimas: $(optimas --version 2>&1)"

if step record; then
  for ex in ${EVAL_EXAMPLES:-spmv edges}; do
    budget=$(( $(left) - 420 )); [ "$budget" -gt 120 ] && budget=120
    [ "$budget" -gt 20 ] || { log "no time to profile $ex"; continue; }
    log "profile $ex (limit ${budget}s)"
    timeout "$budget" optimas profile "examples/$ex" -i small -i default -c 6 -o "$W/h200/$ex" \
      > "$W/h200/$ex.summary.txt" 2> "$W/h200/$ex.progress.txt"
    log "profile $ex exit $?"
  done
  tar czf "$OUT/profiles.tgz" --exclude='*.ncu-rep' --exclude='program.out' -C "$W" h200
fi

if step manual; then
  for ex in ${EVAL_EXAMPLES:-spmv edges}; do
    [ "$(left)" -gt 90 ] || { log "no time for the manual run of $ex"; continue; }
    log "manual $ex"
    rm -rf "$W/manual-$ex" && mkdir -p "$W/manual-$ex" && cp -r "examples/$ex" "$W/manual-$ex/app"
    profile="$W/h200/$ex"; [ -d "$profile" ] || profile="$PWD/tests/data/h200/$ex"
    (
      cd "$W/manual-$ex" || exit 1
      args=(--runs-dir "$RUNS" --import "$profile" "${NO_REPROFILE[@]}" --measure-configs default)
      timeout $(( $(left) - 10 )) optimas run --app app -m manual "${args[@]}" > first.out 2> first.log
      rc=$?
      [ "$rc" -eq 4 ] || { echo "expected exit 4 (waiting), got $rc"; tail -5 first.log; exit 1; }
      prompt=$(ls optimas-manual/prompt-*.md)
      cp "$OLDPWD/tests/scenario/replies/$ex-honest.json" "${prompt/prompt-/reply-}"
      id=$(sed -n 's/.*optimas run --resume \([0-9a-f]*\).*/\1/p' first.log | head -1)
      timeout $(( $(left) - 10 )) optimas run --resume "$id" --runs-dir "$RUNS" > resume.out 2> resume.log
      echo "resume exit $?"
      cat resume.out
      # The build logs: the baseline's and the variant's, which must show the edited files compiled.
      cp "$RUNS/$id"*/baseline/build.log "$OUT/manual-$ex-baseline-build.log"
      cp "$RUNS/$id"*/iterations/1/attempt-1/build.log "$OUT/manual-$ex-variant-build.log"
    ) > "$OUT/manual-$ex.txt" 2>&1
    log "manual $ex: $(grep -m1 'exit' "$OUT/manual-$ex.txt")"
  done
fi

if step builtin; then
  [ "$(left)" -gt 90 ] && {
    log "gpu_loop (builtin) on ${EVAL_EXAMPLES:-spmv edges}"
    OPTIMAS=$(command -v optimas) OPTIMAS_SOURCE_DIR=$PWD OPTIMAS_TEST_DATA="$W" OPTIMAS_GPU_IMPORT=1 \
      OPTIMAS_GPU_MEASURE=default OPTIMAS_GPU_OUT="$W/builtin" OPTIMAS_NCU=/nonexistent/ncu \
      OPTIMAS_GPU_EXAMPLES="${EVAL_EXAMPLES:-spmv edges}" timeout $(( $(left) - 10 )) \
      bash tests/scenario/gpu_loop.sh > "$OUT/builtin.txt" 2>&1
    log "gpu_loop exit $?"
  }
fi

if step aa; then
  for ex in ${AA_EXAMPLES:-edges spmv stream}; do
    [ "$(left)" -gt 60 ] || { log "no time for the A/A run of $ex"; continue; }
    profile="$W/h200/$ex"; [ -d "$profile" ] || profile="tests/data/h200/$ex"
    log "A/A $ex"
    rm -rf "$W/aa-$ex" && cp -r "examples/$ex" "$W/aa-$ex"
    timeout $(( $(left) - 5 )) optimas run --app "$W/aa-$ex" --runs-dir "$RUNS" --import "$profile" "${NO_REPROFILE[@]}" \
      --aa --runs 10 --measure-configs default --validate-configs default --fresh-seeds 0 --json \
      > "$OUT/aa-$ex.json" 2> "$W/aa-$ex.log"
    log "A/A $ex exit $?: $(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["variants"][0]; print(v["status"], v["reason"])' "$OUT/aa-$ex.json" 2>&1)"
  done
fi

# The run store without scratch folders: every artifact, build logs included.
tar czf "$OUT/runs.tgz" --exclude='work' --exclude='*.ncu-rep' -C "$W" runs builtin 2>/dev/null
log "done, $(left)s left"
ls -la "$OUT" | tee -a "$OUT/device.log"
