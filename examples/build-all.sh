#!/usr/bin/env bash
# build-all.sh: build every example with the build command from its optimas.yml.
# Usage: examples/build-all.sh        (NVCC=/path/to/nvcc overrides the compiler)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Find nvcc: $NVCC if set, else nvcc on PATH, else the default CUDA install.
if [[ -z "${NVCC:-}" ]] && ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
NVCC="${NVCC:-nvcc}"
if ! command -v "$NVCC" >/dev/null 2>&1; then
  echo "build-all: nvcc not found (set NVCC or add CUDA's bin directory to PATH)" >&2
  exit 1
fi
echo "build-all: using $(command -v "$NVCC")"

failed=()
built=0
shopt -s nullglob
for yml in "$here"/*/optimas.yml; do
  dir="$(dirname "$yml")"
  name="$(basename "$dir")"
  # the 'command:' line inside the 'build:' block
  cmd="$(sed -n '/^build:/,/^[^[:space:]#]/{s/^[[:space:]]*command:[[:space:]]*//p}' "$yml" | head -n 1)"
  cmd="${cmd%"${cmd##*[![:space:]]}"}"   # trim trailing whitespace
  if [[ -z "$cmd" ]]; then
    echo "build-all: [$name] no build command found in $yml" >&2
    failed+=("$name")
    continue
  fi
  if [[ "$cmd" == nvcc\ * ]]; then
    cmd="$NVCC ${cmd#nvcc }"
  fi
  echo "build-all: [$name] $cmd"
  if (cd "$dir" && bash -c "$cmd"); then
    built=$((built + 1))
  else
    echo "build-all: [$name] FAILED" >&2
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "build-all: ${#failed[@]} example(s) failed: ${failed[*]}" >&2
  exit 1
fi
if [[ $built -eq 0 ]]; then
  echo "build-all: no examples found under $here" >&2
  exit 1
fi
echo "build-all: all $built examples built"
