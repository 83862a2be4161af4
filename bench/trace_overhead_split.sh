#!/usr/bin/env bash
# The kernel tracer's cost, split: wall time of a program run plain and with each library in
# VARIANTS (bench/trace_variants.sh builds them: an injection that does nothing, CUPTI loaded,
# CUPTI initialised, kernel records enabled but not written, the tracer, and buffer settings),
# interleaved round by round so that drift hits all alike. Prints, per variant, the median wall
# time, its overhead against plain, the median of the time the program prints (TIME_RE, a
# sed -E pattern with one group; default heat's "kernel_time_ms: X"), and the tracer's own stats
# line (OPTIMAS_TRACE_STATS). From that line's stamps it splits the traced wall time into
# before (start to CUDA's call of the tracer), main (from there to exit, the tracer's start-up
# left out) and after (the tracer's exit flush left out, to the end of the process). A file
# NAME.env in VARIANTS holds environment assignments for a plain run (e.g. CUDA_MODULE_LOADING=EAGER).
# Needs a GPU. Usage:
#   bench/trace_overhead_split.sh VARIANTS RUNS -- COMMAND...
set -euo pipefail
vdir=${1:?usage: trace_overhead_split.sh VARIANTS RUNS -- COMMAND...}
runs=${2:?}
shift 2
[ "${1:-}" = "--" ] && shift
re=${TIME_RE:-'kernel_time_ms: *([0-9.]+)'}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names=(plain)
for f in "$vdir"/*.so "$vdir"/*.env; do [ -f "$f" ] && names+=("$(basename "$f")"); done
now() { date +%s.%N; }
"$@" > /dev/null # warm-up: module load, the driver's caches
for ((i = 0; i < runs; ++i)); do
  for n in "${names[@]}"; do
    rm -rf "$dir/t" && mkdir "$dir/t"
    t0=$(now)
    if [ "$n" = plain ]; then
      "$@" > "$dir/stdout" 2> "$dir/stderr"
    elif [[ $n == *.env ]]; then
      env $(cat "$vdir/$n") "$@" > "$dir/stdout" 2> "$dir/stderr"
    else
      CUDA_INJECTION64_PATH="$vdir/$n" OPTIMAS_TRACE_DIR="$dir/t" OPTIMAS_TRACE_STATS=1 "$@" > "$dir/stdout" 2> "$dir/stderr"
    fi
    t1=$(now)
    awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.4f\n", a - b }' >> "$dir/$n.wall"
    printed=$(sed -nE "/$re/{s/.*$re.*/\1/p;q}" "$dir/stdout")
    echo "$printed" >> "$dir/$n.printed"
    { grep -h 'optimas-trace: stats' "$dir/stderr" || true; } > "$dir/$n.stats"
    if [ -s "$dir/$n.stats" ]; then
      sed -E 's/.*init ([0-9.]+) ms.*exit flush ([0-9.]+) ms.*called at ([0-9.]+) s, exit at ([0-9.]+) s.*/\1 \2 \3 \4/' "$dir/$n.stats" |
        awk -v t0="$t0" -v t1="$t1" -v d="$dir/$n" '{ printf "%.2f\n", ($3 - t0) * 1000 >> (d ".before");
          printf "%.2f\n", ($4 - $3) * 1000 - $1 >> (d ".main"); printf "%.2f\n", (t1 - $4) * 1000 - $2 >> (d ".after") }'
    fi
    if [ "$n" = tracer.so ]; then cat "$dir"/t/trace-*.tsv 2> /dev/null | grep -c '^L' > "$dir/launches" || true; fi
  done
done
median() { sort -g "$1" | awk 'NF {a[++n]=$1} END {if (!n) {print "nan"; exit} print (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2}'; }
mp=$(median "$dir/plain.wall")
printf 'runs: %d per variant; launches in the last traced run: %s\n' "$runs" "$(cat "$dir/launches" 2>/dev/null || echo '?')"
printf '%-30s %8s %9s %10s %9s %8s %8s  %s\n' variant wall_s overhead printed_ms before_ms main_ms after_ms \
  'tracer stats (last run)'
for n in "${names[@]}"; do
  mw=$(median "$dir/$n.wall")
  ph=()
  for p in before main after; do
    if [ -f "$dir/$n.$p" ]; then ph+=("$(median "$dir/$n.$p")"); else ph+=(-); fi
  done
  printf '%-30s %8.4f %8.2f%% %10s %9s %8s %8s  %s\n' "$n" "$mw" "$(awk -v t="$mw" -v p="$mp" 'BEGIN { print (t - p) / p * 100 }')" \
    "$(median "$dir/$n.printed")" "${ph[@]}" "$(sed -E 's/optimas-trace: stats: //; s/; called at.*//' "$dir/$n.stats")"
done
