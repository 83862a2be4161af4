#!/usr/bin/env bash
# The kernel tracer's cost: wall time of a program with and without liboptimas-trace.so
# injected, interleaved (plain, traced, plain, ...) so drift hits both; prints the medians and
# the overhead. Needs a GPU. Goal (issue #12): <= 5% on a program with 10,000 short launches.
# Usage: bench/trace_overhead.sh TRACER RUNS -- COMMAND...   (e.g. examples/heat's binary)
set -euo pipefail
tracer=${1:?usage: trace_overhead.sh TRACER RUNS -- COMMAND...}
runs=${2:?}
shift 2
[ "${1:-}" = "--" ] && shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a - b }'; }
plain=() traced=()
"$@" > /dev/null # warm-up: module load, the driver's caches
for ((i = 0; i < runs; ++i)); do
  t0=$(now); "$@" > /dev/null; t1=$(now)
  plain+=("$(sub "$t1" "$t0")")
  rm -f "$dir"/trace-*.tsv
  t0=$(now); CUDA_INJECTION64_PATH="$tracer" OPTIMAS_TRACE_DIR="$dir" "$@" > /dev/null; t1=$(now)
  traced+=("$(sub "$t1" "$t0")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
launches=$(cat "$dir"/trace-*.tsv 2>/dev/null | grep -c '^L' || true) # none with a library that only injects
mp=$(median "${plain[@]}") mt=$(median "${traced[@]}")
printf 'runs: %d each; launches traced in the last run: %s\n' "$runs" "$launches"
printf 'plain  wall median: %.4f s  (%s)\n' "$mp" "${plain[*]}"
printf 'traced wall median: %.4f s  (%s)\n' "$mt" "${traced[*]}"
awk -v t="$mt" -v p="$mp" 'BEGIN { printf "tracer overhead: %.2f%%\n", (t - p) / p * 100 }'
