#!/usr/bin/env bash
# Long fuzzing (docs/fuzzing.md): runs each harness named (default: all) to RUNS executions
# (default 10^7), one after the other, its corpus growing in SCRATCH/<harness> (default
# build-fuzz/long) from the committed one, which is not touched. Crashes are written to
# SCRATCH/<harness>.artifacts/; each harness ends with a line of figures. Build first with
# scripts/fuzz.sh. MAX_TIME=S also stops each harness after S seconds, whichever comes first.
# TIMEOUT=S (default 20) is libFuzzer's per-input limit, in wall-clock seconds: on a loaded
# machine, and under `chrt --idle` above all, a harness can wait that long for a core, so raise
# it there (a real hang still shows, later).
#   scripts/fuzz-long.sh                      # all harnesses, 10^7 executions each
#   RUNS=1000000 scripts/fuzz-long.sh fuzz_csv
#   MAX_TIME=1200 nice -n 10 scripts/fuzz-long.sh fuzz_reply fuzz_csv
#   TIMEOUT=1200 chrt --idle 0 scripts/fuzz-long.sh    # only idle CPU, beside other work
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
RUNS=${RUNS:-10000000}
SCRATCH=${SCRATCH:-$FUZZ_BUILD_DIR/long}
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_csv fuzz_ncu_pages fuzz_manifest fuzz_reply fuzz_app_config fuzz_trace)
status=0
for h in "${harnesses[@]}"; do
  bin=$FUZZ_BUILD_DIR/tests/fuzz/$h
  [ -x "$bin" ] || { echo "fuzz-long: $bin is not built (run scripts/fuzz.sh first)"; exit 2; }
  mkdir -p "$SCRATCH/$h" "$SCRATCH/$h.artifacts"
  extra=()
  [ -f "tests/fuzz/$h.dict" ] && extra+=(-dict="tests/fuzz/$h.dict")
  [ -n "${MAX_TIME:-}" ] && extra+=(-max_total_time="$MAX_TIME")
  start=$(date +%s)
  "$bin" -runs="$RUNS" -max_len=8192 -rss_limit_mb=2048 -timeout="${TIMEOUT:-20}" -print_final_stats=1 "${extra[@]}" \
    -artifact_prefix="$SCRATCH/$h.artifacts/" "$SCRATCH/$h" "tests/fuzz/corpus/$h" >"$SCRATCH/$h.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$SCRATCH/$h.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$SCRATCH/$h.log" | tail -1)
  files=$(find "$SCRATCH/$h" -type f | wc -l)
  bytes=$(du -sk "$SCRATCH/$h" | cut -f1)
  # libFuzzer's slow-unit-* files are inputs that took long once (under `chrt --idle`, a harness
  # waits for a core): not failures; crash-, leak-, timeout- and oom- files are.
  crashes=$(find "$SCRATCH/$h.artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  slow=$(find "$SCRATCH/$h.artifacts" -type f -name 'slow-unit-*' | wc -l)
  echo "$h: executions ${execs:-?}, ${rate:-?} exec/s, ${secs} s, corpus ${files} files ${bytes} KB, crashes ${crashes}, slow inputs ${slow} (exit ${rc}; log $SCRATCH/$h.log)"
  [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ] || status=1
done
exit $status
