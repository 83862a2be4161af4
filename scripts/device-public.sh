#!/usr/bin/env bash
# On a GPU machine, from the repository root, with optimas packed by scripts/device-pack.sh and
# the public suites under .scratch/pub (scripts/public-suites.sh; never part of the repository):
# each program as a new user meets it (issue #29's count). The program's folder is copied to a scratch folder beside
# its suite's shared headers (cuda-samples' Common/, Rodinia's common/), `optimas init` writes its
# optimas.yml (no arguments after `--` for cuda-samples, which run without any; Rodinia's programs
# take theirs from PUBLIC_COMMAND), then `optimas run --app .` runs with every default (the builtin
# backend, the tuning stage on the knobs found in the sources). The programs AA names (default:
# transpose pathfinder nw; AA= for none) also get an A/A run (`--aa`), and every program whose run
# accepted a variant gets a confirmation run (NAME.confirm.json, below). Per program: init's and
# the run's output and exit codes go into $OUT/results.tgz, rewritten after each program so that
# a call stopped at its limit keeps what finished; python3 scripts/builtin-table.py FOLDER reads the unpacked .json files, and
# python3 scripts/public-count.py FOLDER... counts over several calls. Copy each call's .json files,
# exits.txt and device.log into docs/h200-public/DATE/: .scratch does not outlive a checkout
# (sessions 20 to 23's were lost with theirs; their figures are in docs/h200-builtin.md).
# With several GPUs the programs are spread over them, one at a time per GPU.
#   PROGRAMS: paths under .scratch/pub (default: the list below), RUN_SECONDS (limit per program,
#   default 300), TOTAL_SECONDS (default 570), RUN_ARGS (more arguments for optimas run), RUNS_TGZ
#   (no: leave out runs.tgz, the run folders less reports and scratch builds), CONFIRM (no: no
#   confirmation runs, as for scripts/pipeline-compare.py).
set -uo pipefail
OUT=${OUT:-/tmp/optimas-public-out}
DEADLINE=$(( $(date +%s) + ${TOTAL_SECONDS:-570} ))
W=/tmp/optimas-public
R=$W/results
rm -rf "$W"; mkdir -p "$W" "$R" "$OUT"
save() { save_results "$R" "$OUT/results.tgz"; }
source "$(dirname "$0")/device-lib.sh"
device_env
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "no GPU" >&2; exit 125; }
PUB=$PWD/.scratch/pub
# The programs of scripts/public-programs.txt, which scripts/public-suites.sh puts in .scratch/pub.
default_programs=$(sed -e 's/#.*//' "$(dirname "$0")/public-programs.txt")
# Rodinia's programs need a command line (their run scripts').
declare -A PUBLIC_COMMAND=([nw]="./needle 2048 10" [pathfinder]="./pathfinder 100000 100 20"
  [bfs]="./bfs.out graph100k.txt" [hotspot]="./hotspot 1024 2 100 temp_1024 power_1024 output.out"
  [gaussian]="./gaussian -s 512" [streamcluster]="./sc_gpu 10 20 256 65536 65536 1000 none output.txt 1")
# Inputs a program needs that its suite does not ship, written into its folder before init.
# bfs: Rodinia's graph format (node count; each node's first edge and edge count; the source; the
# edge count; each edge's node and cost), 100,000 nodes with 1-10 random edges each, seed 1.
prepare_input() {
  case $1 in
    bfs) awk 'BEGIN { srand(1); n = 100000; print n; e = 0
                for (i = 0; i < n; i++) { c[i] = 1 + int(rand() * 10); print e, c[i]; e += c[i] }
                print ""; print 0; print ""; print e
                for (i = 0; i < n; i++) for (k = 0; k < c[i]; k++) print int(rand() * n), 1 + int(rand() * 10) }' \
           > "$2/graph100k.txt" ;;
    # hotspot: a 1024 x 1024 grid's temperatures (K) and powers, one value a line, seed 1.
    hotspot) awk 'BEGIN { srand(1); for (i = 0; i < 1024 * 1024; i++) printf "%.6f\n", 320 + rand() * 20 }' \
               > "$2/temp_1024"
             awk 'BEGIN { srand(2); for (i = 0; i < 1024 * 1024; i++) printf "%.8f\n", rand() * 0.001 }' \
               > "$2/power_1024" ;;
  esac
}
{ nvidia-smi; ncu --version; nvcc --version; optimas --version; } > "$R/environment.txt" 2>&1
save

programs=(${PROGRAMS:-$default_programs})
# Each suite's shared folders, once, before the GPUs start.
for suite in $(printf '%s\n' "${programs[@]}" | cut -d/ -f1 | sort -u); do
  for shared in Common common cuda/util; do # cuda/util: Rodinia's timing.h (bfs)
    [ -d "$PUB/$suite/$shared" ] && mkdir -p "$W/pub/$suite/$(dirname "$shared")" &&
      cp -r "$PUB/$suite/$shared" "$W/pub/$suite/$shared"
  done
done
gpus=$(nvidia-smi -L | grep -c '^GPU ')
# The programs of GPU $1: every ${gpus}th from the $1th, one at a time, so no two measurements
# share a GPU.
on_gpu() {
  local gpu=$1 p name limit left dest start aa rc run_dir
  export CUDA_VISIBLE_DEVICES=$gpu
  for ((i = gpu; i < ${#programs[@]}; i += gpus)); do
    p=${programs[$i]}
    name=$(basename "$p")
    limit=${RUN_SECONDS:-300} left=$(( DEADLINE - $(date +%s) - 15 ))
    [ "$left" -lt "$limit" ] && limit=$left
    [ "$limit" -gt 45 ] || { echo "$name no-time" >> "$R/exits.txt"; continue; }
    echo "[$(date +%T)] $name (limit ${limit}s)" >> "$R/device.log"
    # The program at the same depth below a copy of its suite's shared folders, so that relative
    # includes (../../../Common) still reach them.
    dest=$W/pub/$p
    mkdir -p "$(dirname "$dest")"
    rm -rf "$dest"; cp -r "$PUB/$p" "$dest"
    rm -f "$dest/optimas.yml" # init writes it as a new user's would be
    prepare_input "$name" "$dest"
    start=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$dest" && timeout "$limit" optimas init -- ${PUBLIC_COMMAND[$name]:-}) \
      > "$R/$name.init.log" 2>&1
    echo "$name init $?" >> "$R/exits.txt"
    [ -f "$dest/optimas.yml" ] && cp "$dest/optimas.yml" "$R/$name.optimas.yml"
    left=$(( limit - ($(date +%s) - start) ))
    if [ -f "$dest/optimas.yml" ] && [ "$left" -gt 30 ]; then
      # shellcheck disable=SC2086
      (cd "$dest" && timeout "$left" optimas run --app . --runs-dir "$W/runs-$gpu" --json ${RUN_ARGS:-}) \
        > "$R/$name.json" 2> "$R/$name.log"
      rc=$?
      echo "$name run $rc" >> "$R/exits.txt"
      # A run stopped by its limit leaves no summary: its folder's, as far as it got, goes into
      # NAME.partial.json (the time columns of scripts/public-count.py; never counted as a run).
      # The newest folder is this run's only if the program's name is its application's.
      run_dir=$(ls -td "$W/runs-$gpu"/*-*-*-*-*/ 2>/dev/null | head -1)
      if [ ! -s "$R/$name.json" ] && [ -n "$run_dir" ]; then
        optimas runs show "$(basename "$run_dir")" --runs-dir "$W/runs-$gpu" --json > "$R/$name.partial.json" 2>/dev/null
        python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])).get("app") != sys.argv[2])' \
          "$R/$name.partial.json" "$name" 2>/dev/null || rm -f "$R/$name.partial.json"
      fi
      # An accepted variant, confirmed by fresh runs: the same builtin edits (deterministic, on
      # the run's own profile, imported) measured again from new builds by the fixed rule, whose
      # screening runs are followed by as many fresh confirming ones.
      left=$(( DEADLINE - $(date +%s) - 15 ))
      # Where the best is a tuned point (tN), that point alone is measured again under the fixed
      # rule (--tune-point), with --no-cache: the tuning stage's point cache would otherwise hand
      # back the first run's figures (session 22: gaussian's "confirmation" repeated them to the
      # last digit). Searching again cost pathfinder's confirmation 8 points (session 24).
      tune=(--no-tune)
      point=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r.get("tune") or {}; b=r.get("best") or t.get("best") or ""
print(next((p.get("point", "") for p in t.get("points", []) if b.startswith("t") and p.get("key") == b), ""))' \
        "$R/$name.json" 2>/dev/null)
      [ -n "$point" ] && tune=(--tune-point "$point")
      if [ "$rc" -eq 0 ] && [ "${CONFIRM:-yes}" != no ] && [ -d "$run_dir/profile" ] && [ "$left" -gt 60 ]; then
        # shellcheck disable=SC2086
        (cd "$dest" && timeout "$left" optimas run --app . --runs-dir "$W/runs-$gpu" --import "$run_dir/profile" \
          --verdict fixed --no-cache "${tune[@]}" --json) > "$R/$name.confirm.json" 2> "$R/$name.confirm.log"
        echo "$name confirm $?" >> "$R/exits.txt"
      fi
    fi
    for aa in ${AA-transpose pathfinder nw}; do
      [ "$aa" = "$name" ] || continue
      left=$(( DEADLINE - $(date +%s) - 15 ))
      [ "$left" -gt 60 ] || break
      (cd "$dest" && timeout "$left" optimas run --app . --runs-dir "$W/runs-$gpu" --aa --json) \
        > "$R/$name.aa.json" 2> "$R/$name.aa.log"
      echo "$name aa $?" >> "$R/exits.txt"
    done
    echo "[$(date +%T)] $name done" >> "$R/device.log"
    save
  done
}
for ((g = 0; g < gpus; g++)); do on_gpu "$g" & done
wait
# The results first (a program skipped for want of time is in exits.txt only from here), then the
# run folders, whose archive most likely took a call past its limit (session 24: the call ended
# at 600 s after its last program's end, its runs.tgz too large to come back, pathfinder's tuning
# points and their CSV pages in it); RUNS_TGZ=no leaves them out.
save
[ "${RUNS_TGZ:-yes}" = no ] ||
  timeout 60 tar czf "$OUT/runs.tgz" --exclude='*.ncu-rep' --exclude='*.csv.gz' --exclude='work' \
    --exclude='program.out' --exclude='*.bin' -C "$W" $(cd "$W" && ls -d runs-*) 2>/dev/null
