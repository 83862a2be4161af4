# Every example application compiles with nvcc (CUDA is on CI machines, a GPU is not), by the
# build command of its optimas.yml (nvcc, make or CMake), and building leaves its folder as it was.
source "$(dirname "$0")/lib.sh"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || skip "nvcc not found"
cp -r "$OPTIMAS_SOURCE_DIR/examples" "$WORK/examples"
# Every path and every file's content (an empty build folder left behind counts too).
listing() { (cd "$WORK/examples" && find . | sort && find . -type f -exec sha256sum {} + | sort); }
before=$(listing)
bash "$WORK/examples/build-all.sh" --keep "$WORK/built"
after=$(listing)
[ "$before" = "$after" ] || fail "build-all.sh changed the examples' folders:"$'\n'"$(diff <(echo "$before") <(echo "$after"))"
for yml in "$WORK"/examples/*/optimas.yml; do
  # Each optimas.yml is valid for the engine, and its binary was built (in build-all's copy).
  "$OPTIMAS" profile "$(dirname "$yml")" --dry-run -o "$WORK/p" > /dev/null || fail "$yml"
  name=$(basename "$(dirname "$yml")")
  bin=$(sed -n 's/^ *binary: *\([^ #]*\).*/\1/p' "$yml")
  [ -x "$WORK/built/$name/$bin" ] || fail "$yml: $bin was not built"
done
# The windows example is the importer's template case: five instances of one kernel template
# (its mangled names, e.g. _Z17moving_sum_kernelILi64EEvPKiPiib) and two of another.
instances() { strings "$WORK/built/windows/windows" | grep -E "^_Z[0-9]+$1I[A-Za-z0-9_]+EEv[A-Za-z0-9_]*\$" | sort -u | wc -l; }
[ "$(instances moving_sum_kernel)" -eq 5 ] || fail "windows: $(instances moving_sum_kernel) instances of moving_sum_kernel, not 5"
[ "$(instances window_variance_kernel)" -eq 2 ] || fail "windows: $(instances window_variance_kernel) instances of window_variance_kernel, not 2"
pass "examples compile"
