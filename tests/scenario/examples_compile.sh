# Every example application compiles with nvcc (CUDA is on CI machines, a GPU is not).
source "$(dirname "$0")/lib.sh"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || skip "nvcc not found"
cp -r "$OPTIMAS_SOURCE_DIR/examples" "$WORK/examples"
bash "$WORK/examples/build-all.sh"
for yml in "$WORK"/examples/*/optimas.yml; do
  # Each optimas.yml is valid for the engine, and its binary was built.
  "$OPTIMAS" profile "$(dirname "$yml")" --dry-run -o "$WORK/p" > /dev/null || fail "$yml"
  bin=$(sed -n 's/^ *binary: *\([^ #]*\).*/\1/p' "$yml")
  [ -x "$(dirname "$yml")/$bin" ] || fail "$yml: $bin was not built"
done
pass "examples compile"
