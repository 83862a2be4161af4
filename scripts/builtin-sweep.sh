#!/usr/bin/env bash
# The builtin rules on a fetched CUDA suite (docs/h200-builtin.md): copies SRC to a scratch
# folder, runs build/bench/builtin_sweep on every .cu file with a kernel (diagnostics that
# provoke every rule on every kernel), and compiles each file it changed, original and variant,
# with `nvcc -c` in the file's own folder; the knob search's tunable files (builtin_sweep's
# FILE.tune.cu) are compiled as they are and at one other point. No GPU needed. Prints one line
# per changed file that fails to build while its original builds, then the totals. SRC is never
# written.
#   bash scripts/builtin-sweep.sh ~/src/cuda-samples [-I ~/src/cuda-samples/Common ...]
#   NVCC_FLAGS (default: -arch=sm_90 -std=c++17), JOBS (default: nproc), KEEP=1 keeps the copy.
set -uo pipefail
src=${1:?usage: $0 SRC_DIR [NVCC INCLUDE FLAGS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
sweep=$root/build/bench/builtin_sweep
[ -x "$sweep" ] || { echo "builtin-sweep: $sweep is not built (cmake --build build)" >&2; exit 2; }
command -v nvcc >/dev/null || { echo "builtin-sweep: nvcc is not on PATH" >&2; exit 2; }
work=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/src"
mapfile -t files < <(grep -rl --include='*.cu' '__global__' "$work/src" | sort)
"$sweep" "${files[@]}" > "$work/sweep.tsv"
export NVCC_FLAGS=${NVCC_FLAGS:--arch=sm_90 -std=c++17} INCLUDES="$*"
build() { # FILE.sweep.cu: "ok", "original-fails" or "variant-fails LOG"
  local v=$1 o=${1%.sweep.cu} d
  d=$(dirname "$o")
  # shellcheck disable=SC2086
  if ! timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES -I"$d" -o /dev/null "$o" > "$o.orig.log" 2>&1; then
    through "$v"
    return
  fi
  # shellcheck disable=SC2086
  timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES -I"$d" -o /dev/null -x cu "$v" > "$o.variant.log" 2>&1 &&
    echo "ok $o" || echo "variant-fails $o $o.variant.log"
}
# A file that builds only as part of another (Rodinia's needle_kernel.cu, which needle.cu
# #includes): the including file of its folder is built, as it is and with the variant in place,
# in a copy of the folder beside it (so that its relative includes still resolve).
through() {
  local v=$1 o=${1%.sweep.cu} d host copy rc
  d=$(dirname "$o")
  host=$(grep -lE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$(basename "$o")\"" "$d"/*.cu "$d"/*.cpp 2>/dev/null |
    grep -vE '\.(sweep|tune)\.cu$' | head -1)
  # shellcheck disable=SC2086
  [ -n "$host" ] && timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES -I"$d" -o /dev/null -x cu "$host" > "$o.horig.log" 2>&1 ||
    { echo "original-fails $o"; return; }
  copy=$d.sweep-copy.$$
  cp -r "$d" "$copy" && cp "$v" "$copy/$(basename "$o")"
  # shellcheck disable=SC2086
  timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES -I"$copy" -o /dev/null -x cu "$copy/$(basename "$host")" \
    > "$o.variant.log" 2>&1
  rc=$?
  rm -rf "$copy"
  [ "$rc" -eq 0 ] && echo "ok $o (through $(basename "$host"))" || echo "variant-fails $o $o.variant.log"
}
export -f through
export -f build
find "$work/src" -name '*.sweep.cu' | sort | xargs -r -P "${JOBS:-$(nproc)}" -I{} bash -c 'build "$1"' _ {} > "$work/builds.txt"
# The knob search's tunable files: as they are (no -D: the program's own values) and at one other
# point (FILE.tune.flags).
tuned() { # FILE.tune.cu: "ok", "original-fails", "default-fails LOG" or "point-fails LOG"
  local v=$1 o=${1%.tune.cu} d
  d=$(dirname "$o")
  # shellcheck disable=SC2086
  timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES -I"$d" -o /dev/null "$o" > "$o.torig.log" 2>&1 || { echo "original-fails $o"; return; }
  # shellcheck disable=SC2086
  timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES -I"$d" -o /dev/null -x cu "$v" > "$o.tdefault.log" 2>&1 ||
    { echo "default-fails $o $o.tdefault.log"; return; }
  # shellcheck disable=SC2086
  timeout 300 nvcc -c $NVCC_FLAGS $INCLUDES $(cat "$o.tune.flags") -I"$d" -o /dev/null -x cu "$v" > "$o.tpoint.log" 2>&1 &&
    echo "ok $o" || echo "point-fails $o $o.tpoint.log"
}
export -f tuned
find "$work/src" -name '*.tune.cu' | sort | xargs -r -P "${JOBS:-$(nproc)}" -I{} bash -c 'tuned "$1"' _ {} > "$work/tuned.txt"
grep '^variant-fails' "$work/builds.txt" | while read -r _ o log; do
  echo "variant does not build: ${o#"$work/src/"}: $(grep -m1 'error' "$log")"
done
awk -F'\t' '$2 > 0 {files++; kernels += $2; edits += $3; applied += $4; withheld += $5; if ($7 != "") violated++}
  END {printf "files with kernels %d, kernels %d, edits %d, applied %d, withheld %d, files with guardrail violations %d\n",
       files, kernels, edits, applied, withheld, violated}' "$work/sweep.tsv"
cut -f6 "$work/sweep.tsv" | tr ',' '\n' | grep -v '^$' | sort | uniq -c | awk '{printf "  rule %s: %d edits\n", $2, $1}'
grep -E '^(default|point)-fails' "$work/tuned.txt" | while read -r what o log; do
  echo "tunable file does not build (${what%-fails}): ${o#"$work/src/"}: $(grep -m1 'error' "$log")"
done
echo "knobs: $(awk -F'\t' '$8 != "" {n++} END {print n + 0}' "$work/sweep.tsv") files with knobs; $(cut -f8 "$work/sweep.tsv" | tr ',' '\n' | grep -v '^$' | sed 's/^OPTIMAS_MIN_BLOCKS_.*/min_blocks/' | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')tunable files: $(grep -c '^ok' "$work/tuned.txt") build at both points, $(grep -cE '^(default|point)-fails' "$work/tuned.txt") do not"
echo "builds: $(grep -c '^ok' "$work/builds.txt") variants build ($(grep -c '(through ' "$work/builds.txt") through the file that includes them), $(grep -c '^variant-fails' "$work/builds.txt") do not, $(grep -c '^original-fails' "$work/builds.txt") originals do not build, alone or included (skipped)"
[ -n "${KEEP:-}" ] && echo "kept: $work"
grep -qE '^(variant|default|point)-fails' "$work/builds.txt" "$work/tuned.txt" && exit 1 || exit 0
