# Every example application compiles with nvcc (CUDA is on CI machines, a GPU is not), by the
# build command of its optimas.yml (nvcc, make or CMake), and building leaves its folder as it was.
source "$(dirname "$0")/lib.sh"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || skip "nvcc not found"
cp -r "$OPTIMAS_SOURCE_DIR/examples" "$WORK/examples"
# Every path and every file's content (an empty build folder left behind counts too).
listing() { (cd "$WORK/examples" && find . | sort && find . -type f -exec sha256sum {} + | sort); }
before=$(listing)
# Built in $WORK/point, the folder of the tuning points below: this build is also their default.
bash "$WORK/examples/build-all.sh" --keep "$WORK/point"
mv "$WORK/point" "$WORK/built"
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
# A tuning point reaches the build through NVCC_APPEND_FLAGS, whether nvcc is called directly
# (stream) or by make (spmv): its binary is another than the default's, while a second build of
# the default gives the same one. Every build is made in one folder with one mtime on every file,
# as Optimas builds every variant (nvcc -lineinfo writes the folder's path and the sources' mtimes
# into the binary), with nvcc's temporary names blanked as Optimas' fingerprint does.
product() { perl -0777 -pe 's/tmpxft_[0-9a-f]{8}_[0-9a-f]{8}-[0-9]+/tmpxft/g' "$1" | sha256sum | cut -d' ' -f1; }
point() { # NAME [NVCC_APPEND_FLAGS]: stream and spmv built in $WORK/point, then moved to $WORK/NAME
  NVCC_APPEND_FLAGS="${2:-}" bash "$WORK/examples/build-all.sh" --only stream --only spmv --keep "$WORK/point" > /dev/null
  mv "$WORK/point" "$WORK/$1"
}
ln -s built "$WORK/default" # the first build, every example in the point folder without flags
point tuned "-DTPB=512 -Xptxas -dlcm=cg"
point again
for ex in stream/stream spmv/spmv; do
  [ "$(product "$WORK/default/$ex")" = "$(product "$WORK/again/$ex")" ] || fail "$ex: two default builds differ"
  [ "$(product "$WORK/default/$ex")" != "$(product "$WORK/tuned/$ex")" ] || fail "$ex: -DTPB=512 built the default binary"
done
[ "$before" = "$(listing)" ] || fail "the tuned builds changed the examples' folders"
pass "examples compile"
