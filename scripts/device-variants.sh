#!/usr/bin/env bash
# On a GPU machine: the GPU scenario test, then for every example the builtin optimizer's
# variant (from the recorded profile) against the baseline on the default input: outputs
# compared byte for byte, kernel time over 5 interleaved runs each. A first look only: the
# evaluation stage (statistics, held-out inputs, isolation) is not built yet.
set -uo pipefail
OUT=${OUT:-/tmp/optimas-variants-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PWD/.device/bin:$PATH"
W=/tmp/optimas-variants
rm -rf "$W"; mkdir -p "$W"
OPTIMAS=$(command -v optimas) OPTIMAS_SOURCE_DIR=$PWD bash tests/scenario/gpu_profile.sh > "$OUT/gpu_test.txt" 2>&1
echo "gpu scenario test exit $?" | tee "$OUT/variants.txt"
mkdir -p "$W/base" "$W/var"
cp examples/run-example.sh "$W/base/"; cp examples/run-example.sh "$W/var/"
for ex in ${EXAMPLES:-stream accuracy shmem sobol gather stencil}; do
  cp -r "examples/$ex" "$W/base/$ex"
  optimas -q optimize "tests/data/h200/$ex" --app "$W/base/$ex" -o "$W/$ex-opt" --compile > "$W/$ex-opt.txt" 2>&1 \
    || { echo "$ex: optimize failed: $(tail -3 "$W/$ex-opt.txt")" >> "$OUT/variants.txt"; continue; }
  cp -r "$W/$ex-opt/variant" "$W/var/$ex"
  (cd "$W/base/$ex" && bash -c "$(sed -n 's/^ *command: *\(nvcc[^#]*\).*$/\1/p' optimas.yml | head -1)") > "$W/$ex-build.txt" 2>&1
  echo "== $ex ($(grep -c '^+' "$W/$ex-opt/diff.patch") added lines)" >> "$OUT/variants.txt"
  for rep in 1 2 3 4 5; do
    line="rep $rep:"
    for side in base var; do
      t=$(bash "$W/$side/run-example.sh" "$ex" default "$W/$ex-$side-$rep.out" 2>/dev/null | sed -n 's/^kernel_time_ms: //p')
      line="$line $side ${t:-FAILED} ms"
    done
    cmp -s "$W/$ex-base-$rep.out" "$W/$ex-var-$rep.out" && line="$line, outputs identical" || line="$line, outputs DIFFER"
    echo "$line" >> "$OUT/variants.txt"
    rm -f "$W/$ex-base-$rep.out" "$W/$ex-var-$rep.out"
  done
done
cat "$OUT/variants.txt"
