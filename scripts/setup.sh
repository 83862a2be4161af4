#!/usr/bin/env bash
# The README's first command: install what is needed, build, and run the main job on a bundled
# example with the defaults: `optimas run` on examples/stream with the builtin backend.
# On a machine with an NVIDIA GPU and ncu the loop runs whole (profile, edit, build, validate,
# measure). Without one it says so, starts from the stream profile recorded on an H200 and goes
# as far as it honestly can: diagnostics, prompt, edits, diff and the variant's build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh optimas_tool # the rest (tests, fuzzers, benchmarks): scripts/test.sh
OPTIMAS=./build/src/optimas
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
if ! command -v nvcc >/dev/null; then
  echo "nvcc (CUDA) is not installed: the example cannot be built here. Install the CUDA toolkit"
  echo "from NVIDIA, then run this again. The tests run without it: bash scripts/test.sh"
  exit 0
fi
args=(run --app examples/stream)
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU && command -v ncu >/dev/null; }; then
  echo "No NVIDIA GPU with ncu here: using the profile of examples/stream recorded on an H200"
  echo "(tests/data/h200/stream); the variant is built but not run or measured."
  args+=(--import tests/data/h200/stream)
fi
echo "== optimas ${args[*]}"
rc=0
$OPTIMAS "${args[@]}" || rc=$?
# 3 = the run finished without a variant shown to be faster (or without a GPU to show it).
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"
echo
echo "Inspect it: $OPTIMAS runs list; $OPTIMAS runs show <id>; the artifacts are in runs/<id>/"
