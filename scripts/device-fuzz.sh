#!/usr/bin/env bash
# Long fuzzing on a machine with more cores than this one (docs/fuzzing.md): the harnesses built
# here, run there as libFuzzer jobs in parallel, each harness's workers sharing one corpus.
#   bash scripts/device-fuzz.sh pack fuzz_ncu_pages fuzz_reply   # here: .device-fuzz/ to carry
#   WORKERS="fuzz_ncu_pages=8 fuzz_reply=8" SECONDS_EACH=500 bash scripts/device-fuzz.sh run   # there
#   bash scripts/device-fuzz.sh unpack DIR       # here: DIR/fuzz.tar.gz's new inputs into build-fuzz/long
# `run` writes $OUT/fuzz.tar.gz (every worker's log, the corpora as they ended, any crash) and
# prints one line per harness: executions summed over its workers (each worker's
# stat::number_of_executed_units), crashes. Sanitizer reports are in the workers' logs.
# The C and C++ runtimes stay behind, as in device-pack.sh: the other machine's are newer.
# Libraries that .device/lib (device-pack.sh) already holds are not packed twice: carry both.
set -euo pipefail
cd "$(dirname "$0")/.."
pack=.device-fuzz

case "${1:-}" in
pack)
  shift
  [ $# -gt 0 ] || set -- fuzz_csv fuzz_ncu_pages fuzz_manifest fuzz_reply fuzz_app_config
  rm -rf "$pack"
  mkdir -p "$pack/bin" "$pack/lib" "$pack/corpus"
  for h in "$@"; do
    strip -o "$pack/bin/$h" "build-fuzz/tests/fuzz/$h"
    [ -f "tests/fuzz/$h.dict" ] && cp "tests/fuzz/$h.dict" "$pack/bin/"
    # The committed seeds and what earlier long runs found, as one starting corpus.
    mkdir -p "$pack/corpus/$h"
    cp tests/fuzz/corpus/"$h"/* "$pack/corpus/$h/"
    [ -d "build-fuzz/long/$h" ] && find "build-fuzz/long/$h" -type f -exec cp -t "$pack/corpus/$h/" {} +
    ldd "build-fuzz/tests/fuzz/$h" | awk '/=> \// {print $3}' | while read -r lib; do
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
        *) [ -f ".device/lib/$(basename "$lib")" ] || cp -L "$lib" "$pack/lib/" ;; # run looks there too
      esac
    done
  done
  tar czf "$pack/corpus.tar.gz" -C "$pack" corpus && rm -rf "$pack/corpus"
  grep -qx '/.device-fuzz/' .git/info/exclude 2>/dev/null || echo '/.device-fuzz/' >> .git/info/exclude
  du -sh "$pack"
  ;;
run)
  : "${OUT:?run is for the device machine, where OUT is set}"
  : "${WORKERS:?WORKERS=\"harness=N ...\"}"
  secs=${SECONDS_EACH:-500}
  work=/tmp/optimas-fuzz
  rm -rf "$work" && mkdir -p "$work"
  tar xzf "$pack/corpus.tar.gz" -C "$work"
  export LD_LIBRARY_PATH="$PWD/$pack/lib:$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  nproc
  pids=()
  for hw in $WORKERS; do
    h=${hw%=*} n=${hw#*=}
    mkdir -p "$work/$h.artifacts" "$work/$h.logs"
    extra=()
    [ -f "$pack/bin/$h.dict" ] && extra+=(-dict="$PWD/$pack/bin/$h.dict")
    # -jobs: n independent processes (fuzz-<i>.log each) that share and reload the corpus.
    (cd "$work/$h.logs" && "$OLDPWD/$pack/bin/$h" -jobs="$n" -workers="$n" -max_total_time="$secs" \
      -max_len=8192 -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 "${extra[@]}" \
      -artifact_prefix="$work/$h.artifacts/" "$work/corpus/$h" >"$work/$h.logs/main.log" 2>&1) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  for hw in $WORKERS; do
    h=${hw%=*}
    execs=$(cat "$work/$h.logs"/fuzz-*.log | awk '/^stat::number_of_executed_units:/ {n += $2} END {print n + 0}')
    ended=$(grep -l '^stat::number_of_executed_units' "$work/$h.logs"/fuzz-*.log | wc -l)
    crashes=$(find "$work/$h.artifacts" -type f | wc -l)
    echo "$h: executions ${execs:-0} over $ended workers that ended with figures, ${secs} s each, crashes $crashes"
  done
  tar czf "$OUT/fuzz.tar.gz" -C "$work" .
  ;;
unpack)
  dir=${2:?unpack DIR (where fuzz.tar.gz came back)}
  tmp=$(mktemp -d)
  tar xzf "$dir/fuzz.tar.gz" -C "$tmp"
  for c in "$tmp"/corpus/*; do
    h=$(basename "$c")
    mkdir -p "build-fuzz/long/$h"
    find "$c" -type f -exec cp -n -t "build-fuzz/long/$h/" {} + # tens of thousands: not as one argument list
    echo "$h: $(ls "build-fuzz/long/$h" | wc -l) inputs in build-fuzz/long/$h"
  done
  mkdir -p "$dir/logs" && cp -r "$tmp"/*.logs "$tmp"/*.artifacts "$dir/logs/" 2>/dev/null || true
  rm -rf "$tmp"
  ;;
*)
  echo "usage: $0 pack [HARNESS...] | run | unpack DIR" >&2
  exit 2
  ;;
esac
