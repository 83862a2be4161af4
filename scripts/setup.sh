#!/usr/bin/env bash
# The README's first command: install what is needed, build, and run the main job on a
# bundled example with the defaults. Until the closed loop (optimas run) exists, the main job is
# what exists: import the example's profile recorded on an H200, distil its evidence, and let
# the builtin optimizer propose a variant (built with nvcc where CUDA is installed). Nothing is
# measured here: that needs a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
OPTIMAS=./build/src/optimas
echo
echo "== optimas profile --import tests/data/h200/stream (recorded on an NVIDIA H200)"
$OPTIMAS profile --import tests/data/h200/stream
echo
echo "== optimas analyze tests/data/h200/stream"
$OPTIMAS analyze tests/data/h200/stream
echo
echo "== optimas optimize tests/data/h200/stream --app examples/stream (builtin backend)"
compile=()
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  compile=(--compile)
fi
$OPTIMAS optimize tests/data/h200/stream --app examples/stream -o optimas-variant/stream "${compile[@]}"
if command -v ncu >/dev/null && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo
  echo "A GPU and ncu are here: profile an example yourself with"
  echo "  ./build/src/optimas profile examples/stream -i small"
fi
