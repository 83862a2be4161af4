#!/usr/bin/env bash
# On a GPU machine, from the repository root, after scripts/device-pack.sh on the build machine:
# format-3 kernel traces (the application's timeline, issue #30) of two examples that copy
# between host and device, to replace or join the synthetic ones of tests/data/trace-v3.
#   1. record: heat (a device-to-host copy of the residual after every step: --check 1, and
#      every 100 steps: --check 100) and stream (large copies in both directions, a device
#      synchronisation), each traced plainly with the tracer;
#   2. analyze: optimas profile + optimas analyze on heat -i small and stream -i small, whose AP
#      items should name heat's per-step copy;
#   3. overhead: the tracer with and without the timeline's records (bench/trace_variants.sh's
#      way of building it) on heat default, whose 4,000 steps copy after each one.
#   4. public: Rodinia's bfs (from .scratch/pub, fetched, never part of the repository) on a
#      path-like graph of 2,000 nodes, whose 1,000 levels each launch two kernels between two
#      1-byte synchronous copies: traced plainly, then set up by `optimas init` and profiled and
#      analyzed as a new user would.
# Every step stops at a shared deadline (TIMELINE_SECONDS, default 540); results land in $OUT:
# $OUT/trace-v3/<example>-<config>/trace-<pid>.tsv with a README.md line saying how each was
# recorded (GPU, driver, CUDA, command), ready to copy under tests/data (also packed as
# $OUT/trace-v3.tgz: the device returns nothing deeper than two folders).
set -uo pipefail
OUT=${OUT:-/tmp/optimas-timeline-out}
DEADLINE=$(( $(date +%s) + ${TIMELINE_SECONDS:-540} ))
STEPS=${TIMELINE_STEPS:-record analyze public overhead}
source "$(dirname "$0")/device-lib.sh"
device_env
cupti=$CUPTI_DIR
TRACER=$PWD/.device/bin/liboptimas-trace.so
W=/tmp/optimas-timeline
rm -rf "$W"; mkdir -p "$W" "$OUT/trace-v3"
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/device.log"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
step() { [[ " $STEPS " == *" $1 "* ]] && [ "$(left)" -gt 20 ]; }
limit() { local l=$(( $(left) - 15 )); [ "$l" -gt "$1" ] && l=$1; echo "$l"; }

{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version;
  uname -a; echo "cupti: $cupti"; ldd "$TRACER"; } > "$OUT/environment.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
cuda=$(nvcc --version 2>/dev/null | grep -o 'V[0-9][0-9.]*' | head -1)
log "optimas: $(optimas --version 2>&1); GPU: $gpu; nvcc $cuda; cupti in $cupti"
for ex in heat stream; do
  ( cd "examples/$ex" && nvcc -O3 -arch=sm_90 -lineinfo -o "$W/$ex" main.cu ) || log "$ex did not build"
done

# NAME ARGS...: one traced run of a built example into $OUT/trace-v3/NAME, with its README line.
record() {
  local name=$1 dir="$OUT/trace-v3/$1"
  shift
  mkdir -p "$dir"
  ( cd "$W" && timeout "$(limit 120)" env CUDA_INJECTION64_PATH="$TRACER" OPTIMAS_TRACE_DIR="$dir" "$@" ) \
    > "$W/$name.txt" 2>&1
  local rc=$?
  local f
  f=$(ls "$dir"/trace-*.tsv 2>/dev/null | head -1)
  log "$name: exit $rc; $(head -1 "$f" 2>/dev/null); $(grep -c '^L' "$f" 2>/dev/null) L, $(grep -c '^M' "$f" 2>/dev/null) M, $(grep -c '^S' "$f" 2>/dev/null) S, $(grep -c '^Y' "$f" 2>/dev/null) Y, $(grep -c '^R' "$f" 2>/dev/null) R lines; end: $(grep '^E' "$f" 2>/dev/null)"
  grep -h 'optimas-trace:' "$W/$name.txt" | head -3 | tee -a "$OUT/device.log"
  echo "Recorded on the lent H200 by scripts/device-timeline.sh, $(date +%F): \`$*\` (run in the build folder) with CUDA_INJECTION64_PATH=liboptimas-trace.so; GPU, driver: $gpu; nvcc $cuda." \
    > "$dir/README.md"
}

if step record; then
  record heat-small-check1 "$W/heat" --nx 256 --ny 256 --steps 500 --check 1 --seed 3 --out "$W/h1.out"
  record heat-small-check100 "$W/heat" --nx 256 --ny 256 --steps 500 --check 100 --seed 3 --out "$W/h100.out"
  record stream-small "$W/stream" --n 4194304 --reps 5 --seed 11 --out "$W/s.out"
fi

if step analyze; then
  for ex in heat stream; do
    timeout "$(limit 120)" optimas profile "examples/$ex" -i small -o "$W/profile-$ex" \
      > "$W/profile-$ex.txt" 2> "$W/profile-$ex.progress.txt"
    log "profile $ex -i small: exit $?"
    timeout "$(limit 60)" optimas analyze "$W/profile-$ex" > "$OUT/analyze-$ex.txt" 2>&1
    log "analyze $ex: exit $?; $(grep -c '^\[AP' "$OUT/analyze-$ex.txt") AP items"
    grep '^\[AP' "$OUT/analyze-$ex.txt" | cut -c1-400 | tee -a "$OUT/device.log"
    timeout "$(limit 60)" optimas analyze "$W/profile-$ex" --json > "$OUT/analyze-$ex.json" 2>> "$OUT/device.log"
  done
fi

if step public && [ -d .scratch/pub/rodinia/cuda/bfs ]; then
  P=$W/pub/rodinia
  mkdir -p "$P/cuda"
  cp -r .scratch/pub/rodinia/common "$P/"
  cp -r .scratch/pub/rodinia/cuda/bfs .scratch/pub/rodinia/cuda/util "$P/cuda/"
  rm -f "$P/cuda/bfs/optimas.yml"
  # Rodinia's graph format: the node count, each node's first edge and edge count, the source,
  # the edge count, each edge's node and cost. A path whose nodes link to those 1 and 2 away.
  awk 'BEGIN { n = 2000; print n; e = 0
         for (i = 0; i < n; i++) { c = 0; for (d = -2; d <= 2; d++) if (d && i + d >= 0 && i + d < n) c++
                                   print e, c; e += c }
         print ""; print 0; print ""; print e
         for (i = 0; i < n; i++) for (d = -2; d <= 2; d++) if (d && i + d >= 0 && i + d < n) print i + d, 1 }' \
    > "$P/cuda/bfs/graph-path2000.txt"
  ( cd "$P/cuda/bfs" && make > "$W/bfs-make.txt" 2>&1 && cp bfs.out "$W/bfs.out" && cp graph-path2000.txt "$W/" ) ||
    log "bfs did not build: $(tail -3 "$W/bfs-make.txt")"
  record bfs-path2000 "$W/bfs.out" graph-path2000.txt
  ( cd "$P/cuda/bfs" && rm -f bfs.out && timeout "$(limit 120)" optimas init -- ./bfs.out graph-path2000.txt ) \
    > "$OUT/init-bfs.txt" 2>&1
  log "init bfs: exit $?"
  cp "$P/cuda/bfs/optimas.yml" "$OUT/bfs.optimas.yml" 2>/dev/null
  ( cd "$P/cuda" && timeout "$(limit 150)" optimas profile bfs -o "$W/profile-bfs" ) > "$W/profile-bfs.txt" 2> "$OUT/profile-bfs.progress.txt"
  log "profile bfs: exit $?"
  timeout "$(limit 60)" optimas analyze "$W/profile-bfs" > "$OUT/analyze-bfs.txt" 2>&1
  log "analyze bfs: exit $?; $(grep -c '^\[AP' "$OUT/analyze-bfs.txt") AP items"
  grep '^\[AP' "$OUT/analyze-bfs.txt" | cut -c1-400 | tee -a "$OUT/device.log"
  timeout "$(limit 60)" optimas analyze "$W/profile-bfs" --json > "$OUT/analyze-bfs.json" 2>> "$OUT/device.log"
fi

if step overhead; then
  inc=$(dirname "$(find /usr/local/cuda*/ -name cupti.h 2>/dev/null | head -1)")
  lib=$(dirname "$(find /usr/local/cuda*/ -name 'libcupti.so' 2>/dev/null | head -1)")
  if command -v c++ > /dev/null && [ -n "$inc" ]; then
    c++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -I"$inc" -DOPTIMAS_TRACE_TIMELINE=0 \
      -o "$W/kernels-only.so" src/tracer/optimas_trace.cpp -L"$lib" -lcupti -Wl,-rpath,"$lib" -static-libstdc++ \
      -static-libgcc -Wl,--exclude-libs,ALL -Wl,--no-undefined || log "the kernels-only tracer did not build"
    for lib_so in "$W/kernels-only.so" "$TRACER"; do
      r=$(timeout "$(limit 150)" bash bench/trace_overhead.sh "$lib_so" "${OVERHEAD_RUNS:-7}" -- "$W/heat" --nx 512 --ny 512 \
        --steps 4000 --check 1 --out "$W/o.out" 2>&1 | tr '\n' ' ')
      log "overhead, $(basename "$lib_so"), heat default (4,000 steps, a copy after each): $r"
    done
  else
    log "no C++ compiler or CUPTI header here: the overhead step needs both"
  fi
fi

log "done, $(left) s left"
ls -laR "$OUT" | tee -a "$OUT/device.log"

# The device returns files two folders deep at most: the traces travel as one archive too.
tar czf "$OUT/trace-v3.tgz" -C "$OUT" trace-v3
