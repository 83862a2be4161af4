#!/usr/bin/env bash
# The README's first command: install what is needed, build, and run the main job on a
# bundled example with the defaults. Until the optimization loop exists, the main job is the
# profile import and summary of the example profile recorded on an H200.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo
echo "== optimas profile --import tests/data/h200/stream (recorded on an NVIDIA H200)"
./build/src/optimas profile --import tests/data/h200/stream
if command -v ncu >/dev/null && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo
  echo "A GPU and ncu are here: profile an example yourself with"
  echo "  ./build/src/optimas profile examples/stream -i small"
fi
