#!/usr/bin/env bash
# build-all.sh: build every example with the build command from its optimas.yml, each in a
# temporary copy of its folder, so that no object file, binary or build folder is left in the
# examples' own folders.
# Usage: examples/build-all.sh [--keep DIR] [--only NAME]...
#   --keep DIR   build the copies in DIR/<example> and keep them (DIR is created; it must not
#                hold an example of the same name)
#   --only NAME  build only this example (repeatable)
#   NVCC_APPEND_FLAGS  nvcc appends these to every command line (a tuning point: -DTPB=512
#                -Xptxas -dlcm=cg; docs/tuning.md), whichever way the example calls nvcc
#   NVCC=PATH    the CUDA compiler. A build command that starts with `nvcc` gets it in its place,
#                `make` gets NVCC=PATH and a CMake configure step -DCMAKE_CUDA_COMPILER=PATH
#                (CUDACXX is set too, for CMake calls the substitution does not reach).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

keep=""
only=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keep) keep="${2:?--keep needs a folder}"; shift 2 ;;
    --only) only+=("${2:?--only needs an example name}"); shift 2 ;;
    *) echo "usage: build-all.sh [--keep DIR] [--only NAME]..." >&2; exit 2 ;;
  esac
done

# Find nvcc: $NVCC if set, else nvcc on PATH, else the default CUDA install.
if [[ -z "${NVCC:-}" ]] && ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
NVCC="${NVCC:-nvcc}"
if ! nvcc_path="$(command -v "$NVCC")"; then
  echo "build-all: nvcc not found (set NVCC or add CUDA's bin directory to PATH)" >&2
  exit 1
fi
# An absolute path: CMake wants one, and the builds run in other folders.
nvcc_path="$(cd "$(dirname "$nvcc_path")" && pwd)/$(basename "$nvcc_path")"
export NVCC="$nvcc_path" CUDACXX="$nvcc_path"
q_nvcc="$(printf '%q' "$nvcc_path")"
echo "build-all: using $nvcc_path${NVCC_APPEND_FLAGS:+ with NVCC_APPEND_FLAGS=$NVCC_APPEND_FLAGS}"

if [[ -n "$keep" ]]; then
  mkdir -p "$keep"
  root="$(cd "$keep" && pwd)"
else
  root="$(mktemp -d "${TMPDIR:-/tmp}/build-all-XXXXXX")"
  trap 'rm -rf "$root"' EXIT
fi

# build_key KEY YML: the value of KEY in the yml's `build:` block, or nothing.
build_key() {
  local v
  v="$(sed -n '/^build:/,/^[^[:space:]#]/{s/^[[:space:]]*'"$1"':[[:space:]]*//p}' "$2" | head -n 1)"
  if [[ "$1" != command ]]; then v="${v%%[[:space:]]#*}"; fi  # a trailing comment
  printf '%s' "${v%"${v##*[![:space:]]}"}"                     # trailing whitespace
}

# with_compiler COMMAND: the build command, told to use $nvcc_path.
with_compiler() {
  case "$1" in
    nvcc\ *) printf '%s' "$q_nvcc ${1#nvcc }" ;;
    make | make\ *) printf '%s' "make NVCC=$q_nvcc${1#make}" ;;
    cmake\ --build*) printf '%s' "$1" ;;
    cmake\ *) printf '%s' "cmake -DCMAKE_CUDA_COMPILER=$q_nvcc ${1#cmake }" ;;
    *) printf '%s' "$1" ;;
  esac
}

failed=()
built=0
shopt -s nullglob
for yml in "$here"/*/optimas.yml; do
  dir="$(dirname "$yml")"
  name="$(basename "$dir")"
  if [[ ${#only[@]} -gt 0 && ! " ${only[*]} " =~ " $name " ]]; then continue; fi
  cmd="$(build_key command "$yml")"
  binary="$(build_key binary "$yml")"
  clean="$(build_key clean "$yml")"
  build_dir="$(build_key dir "$yml")"
  if [[ -z "$cmd" ]]; then
    echo "build-all: [$name] no build command found in $yml" >&2
    failed+=("$name")
    continue
  fi
  copy="$root/$name"
  if [[ -e "$copy" ]]; then
    echo "build-all: [$name] $copy exists already" >&2
    failed+=("$name")
    continue
  fi
  cp -R "$dir" "$copy"
  # One modification time on every file, as Optimas' builds have: nvcc -lineinfo records each
  # source's mtime (and the folder's path) in the binary, so two builds of one example in one
  # folder are then the same bytes but for nvcc's temporary names. No object file is copied, so
  # make still compiles everything.
  find "$copy" -type f -exec touch -d @946684800 {} +
  # Whatever a build by hand left in the example's folder must not take part: its out-of-tree
  # build folder (a CMake cache names the folder it was made for) and, where the application
  # says how, its objects.
  if [[ -n "$build_dir" ]]; then rm -rf "${copy:?}/$build_dir"; fi
  if [[ -n "$clean" ]] && ! (cd "$copy" && bash -c "$clean") > /dev/null; then
    echo "build-all: [$name] the clean command failed: $clean" >&2
    failed+=("$name")
    continue
  fi
  cmd="$(with_compiler "$cmd")"
  echo "build-all: [$name] $cmd"
  if ! (cd "$copy" && bash -c "$cmd"); then
    echo "build-all: [$name] FAILED" >&2
    failed+=("$name")
  elif [[ -n "$binary" && ! -x "$copy/$binary" ]]; then
    echo "build-all: [$name] the build made no $binary" >&2
    failed+=("$name")
  else
    built=$((built + 1))
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
echo "build-all: all $built examples built${keep:+ (in $root)}"
