#!/usr/bin/env bash
# Records the root-cause test data (issue #49) on a GPU machine, from the repository root, with
# optimas packed by scripts/device-pack.sh: the planted-cause example (examples/causes, its six
# input configurations) and public programs as a new user profiles them (copied beside their
# suite's shared folders from .scratch/pub, `optimas init`, then `optimas profile .` with the
# defaults). Everything goes into $OUT/causes.tgz, rewritten after each step, and the device's
# SASS of each program into it too (cuobjdump), for the readers' tests.
#   CAUSES_PUBLIC: paths under .scratch/pub (default: Rodinia bfs, cuda-samples transpose)
#   TOTAL_SECONDS: the whole call's limit (default 540)
set -uo pipefail
OUT=${OUT:-/tmp/optimas-causes-out}
DEADLINE=$(( $(date +%s) + ${TOTAL_SECONDS:-540} ))
W=/tmp/optimas-causes
R=$W/results
rm -rf "$W"; mkdir -p "$R" "$OUT"
source "$(dirname "$0")/device-lib.sh"
device_env
save() { save_results "$R" "$OUT/causes.tgz"; }
log() { echo "[$(date +%T)] $*" | tee -a "$R/device.log"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
{ nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version;
  nvcc --version; optimas --version; } > "$R/environment.txt" 2>&1

# 1. The planted causes: every configuration, relative paths and defaults, as the README says.
log "profile examples/causes"
timeout $(( $(left) > 240 ? 240 : $(left) )) optimas profile examples/causes -o "$R/causes" \
  > "$R/causes.summary.txt" 2> "$R/causes.progress.txt"
log "profile examples/causes exit $?"
(cd examples/causes && nvcc -O3 -arch=sm_90 -lineinfo -o "$W/causes" main.cu && cuobjdump -sass "$W/causes") \
  > "$R/causes.sass.txt" 2>&1
rm -f "$R"/causes/*/*.ncu-rep "$R"/causes/*.ncu-rep
save

# 2. Public programs, as a new user meets them.
PUB=$PWD/.scratch/pub
declare -A COMMAND=([bfs]="./bfs.out graph100k.txt")
for p in ${CAUSES_PUBLIC:-rodinia/cuda/bfs cuda-samples/Samples/6_Performance/transpose}; do
  name=$(basename "$p") suite=${p%%/*}
  [ "$(left)" -gt 60 ] || { log "no time left for $name"; continue; }
  for shared in Common common cuda/util; do
    [ -d "$PUB/$suite/$shared" ] && [ ! -d "$W/pub/$suite/$shared" ] && mkdir -p "$W/pub/$suite/$(dirname "$shared")" &&
      cp -r "$PUB/$suite/$shared" "$W/pub/$suite/$shared"
  done
  dest=$W/pub/$p
  mkdir -p "$(dirname "$dest")"; cp -r "$PUB/$p" "$dest"; rm -f "$dest/optimas.yml"
  # bfs: Rodinia's graph format, 100,000 nodes with 1-10 random edges each, seed 1 (as device-public.sh).
  [ "$name" = bfs ] && awk 'BEGIN { srand(1); n = 100000; print n; e = 0
      for (i = 0; i < n; i++) { c[i] = 1 + int(rand() * 10); print e, c[i]; e += c[i] }
      print ""; print 0; print ""; print e
      for (i = 0; i < n; i++) for (k = 0; k < c[i]; k++) print int(rand() * n), 1 + int(rand() * 10) }' \
      > "$dest/graph100k.txt"
  log "init $name"
  # shellcheck disable=SC2086
  (cd "$dest" && timeout 120 optimas init -- ${COMMAND[$name]:-}) > "$R/$name.init.log" 2>&1
  log "init $name exit $?"
  limit=$(( $(left) - 20 )); [ "$limit" -gt 200 ] && limit=200
  (cd "$dest" && timeout "$limit" optimas profile . -o "$R/$name") > "$R/$name.summary.txt" 2> "$R/$name.progress.txt"
  log "profile $name exit $?"
  cp "$dest/optimas.yml" "$R/$name.optimas.yml" 2>/dev/null
  bin=$(find "$dest" -maxdepth 2 -type f -perm -u+x ! -name '*.sh' ! -name '*.cu' ! -name 'run' | head -1)
  [ -n "$bin" ] && cuobjdump -sass "$bin" > "$R/$name.sass.txt" 2>&1
  find "$R/$name" -name '*.ncu-rep' -delete 2>/dev/null
  save
done
log "done, $(left)s left"
save
ls -la "$OUT"
