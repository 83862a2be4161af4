#!/usr/bin/env bash
# Fills .scratch/pub (never part of the repository) with what scripts/device-public.sh needs from
# the public suites: the programs of scripts/public-programs.txt and their suites' shared folders
# (cuda-samples' Common/, Rodinia's common/ and cuda/util/), taken from the suites' git
# repositories as fetched (for example by the `fetch` tool into /work/.mirror), at their HEAD.
# Documentation (doc/, .vscode/, PDFs) is left out: the copy travels to the GPU machine, whose
# carried tree is capped. Prints what it wrote and its size.
#   bash scripts/public-suites.sh CUDA_SAMPLES_GIT_DIR RODINIA_GIT_DIR [DEST]
set -euo pipefail
cs=${1:?usage: $0 CUDA_SAMPLES_GIT_DIR RODINIA_GIT_DIR [DEST]}
rodinia=${2:?usage: $0 CUDA_SAMPLES_GIT_DIR RODINIA_GIT_DIR [DEST]}
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${3:-$root/.scratch/pub}
mkdir -p "$dest"
grep -qx '/.scratch/' "$root/.git/info/exclude" 2>/dev/null || echo '/.scratch/' >> "$root/.git/info/exclude"
mapfile -t programs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$root/scripts/public-programs.txt")
# extract GIT_DIR SUITE PATH...: the files under PATHs of the suite's HEAD, in DEST/SUITE (the
# folders replaced). A fetched mirror may lack its largest blobs: a missing file is named, and
# the script fails at the end unless it was documentation.
missing=0
extract() {
  local git_dir=$1 suite=$2 mode type sha path
  shift 2
  for p in "$@"; do rm -rf "${dest:?}/$suite/$p"; done
  while IFS=$'\t' read -r meta path; do
    read -r mode type sha <<< "$meta"
    [ "$type" = blob ] || continue
    case "/$path" in */doc/* | */.vscode/* | *.pdf | */lavaMD/result.txt) continue ;; esac # lavaMD/result.txt: its output, as committed
    mkdir -p "$dest/$suite/$(dirname "$path")"
    if ! git --git-dir="$git_dir" cat-file blob "$sha" > "$dest/$suite/$path" 2> /dev/null; then
      echo "public-suites: $suite/$path is missing from $git_dir" >&2
      missing=$((missing + 1))
      continue
    fi
    [ "$mode" = 100755 ] && chmod +x "$dest/$suite/$path"
  done < <(git --git-dir="$git_dir" ls-tree -r HEAD -- "$@")
  echo "$suite $(git --git-dir="$git_dir" rev-parse --short=8 HEAD): $*"
}
cs_paths=(Common) rodinia_paths=(common cuda/util)
for p in "${programs[@]}"; do
  case $p in
    cuda-samples/*) cs_paths+=("${p#cuda-samples/}") ;;
    rodinia/*) rodinia_paths+=("${p#rodinia/}") ;;
    *) echo "public-suites: $p: not under cuda-samples/ or rodinia/" >&2; exit 2 ;;
  esac
done
extract "$cs" cuda-samples "${cs_paths[@]}"
extract "$rodinia" rodinia "${rodinia_paths[@]}"
# The port to CUDA 13 that `optimas init` names and a user makes before anything runs: calls
# CUDA 13 removed, replaced by their successors in Rodinia's sources (the same behaviour for one
# device per thread; asyncEngineCount > 0 is what deviceOverlap said; gaussian's line that
# prints the clock rate, a field CUDA 13 removed, is deleted).
grep -rlE 'cudaThread(Synchronize|Exit)|deviceOverlap|deviceProp\.clockRate' "$dest/rodinia" --include='*.cu' --include='*.c' --include='*.h' \
  --include='*.cuh' --include='*.cpp' | while read -r f; do
  sed -i -e 's/cudaThreadSynchronize/cudaDeviceSynchronize/g' -e 's/cudaThreadExit/cudaDeviceReset/g' \
    -e 's/\bdeviceOverlap\b/asyncEngineCount/g' -e '/deviceProp\.clockRate/d' "$f"
  echo "public-suites: ported ${f#"$dest/"} (calls CUDA 13 removed)"
done
# Results made visible, as the run's validation probe asks (docs/loop.md, "The validation
# probe"): pathfinder prints its result and nw writes result.txt only when a macro is defined
# (both commented out as shipped), gaussian prints its solution only with verbose set, which
# nothing sets. As shipped, validation of these three compared banner lines alone.
port_results() { # FILE SED-SCRIPT
  [ -f "$dest/rodinia/cuda/$1" ] || return 0
  sed -i -e "$2" "$dest/rodinia/cuda/$1"
  echo "public-suites: ported rodinia/cuda/$1 (prints or writes its results)"
}
port_results pathfinder/pathfinder.cu 's|^//#define BENCH_PRINT|#define BENCH_PRINT|'
port_results nw/needle.cu 's|^//#define TRACEBACK|#define TRACEBACK|'
port_results gaussian/gaussian.cu 's|int verbose = 0;|int verbose = 1;|'
du -sh "$dest"
[ "$missing" -eq 0 ] || { echo "public-suites: $missing file(s) missing (fetch the suite again)" >&2; exit 1; }
