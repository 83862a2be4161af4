#!/usr/bin/env bash
# Builds the kernel tracer (src/tracer/optimas_trace.cpp) several times with its knobs changed,
# for bench/trace_overhead_split.sh: the cost of the tracer split into its parts, and the
# effect of CUPTI's buffer settings. Needs a C++ compiler and CUPTI's header and library (the
# CUDA toolkit); no GPU. Usage: bench/trace_variants.sh OUTDIR [CUDA_HOME]
set -euo pipefail
out=${1:?usage: trace_variants.sh OUTDIR [CUDA_HOME]}
cuda=${2:-${CUDA_HOME:-/usr/local/cuda}}
src=$(cd "$(dirname "$0")/.." && pwd)/src/tracer/optimas_trace.cpp
inc=$(dirname "$(find "$cuda/" -name cupti.h | head -1)")
lib=$(dirname "$(find "$cuda/" -name 'libcupti.so' | head -1)")
mkdir -p "$out"
build() { # NAME FLAGS...
  local name=$1
  shift
  c++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -I"$inc" "$@" -o "$out/$name.so" "$src" -L"$lib" -lcupti \
    -Wl,-rpath,"$lib" -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL -Wl,--no-undefined
}
# A library CUDA injects that does nothing and loads no CUPTI.
printf 'int InitializeInjection(void) { return 1; }\n' > "$out/noop.c"
cc -shared -fPIC -o "$out/noop.so" "$out/noop.c"
build stage0-cupti-loaded -DOPTIMAS_TRACE_STAGE=0
build stage1-cupti-init -DOPTIMAS_TRACE_STAGE=1
build stage2-records-unwritten -DOPTIMAS_TRACE_STAGE=2
build tracer
build pinned -DOPTIMAS_TRACE_PINNED=1
build serial -DOPTIMAS_TRACE_SERIAL=1
build devbuf256k-1 -DOPTIMAS_TRACE_DEVICE_BUFFER_KB=256 -DOPTIMAS_TRACE_DEVICE_BUFFERS=1
build pinned-devbuf256k-1 -DOPTIMAS_TRACE_PINNED=1 -DOPTIMAS_TRACE_DEVICE_BUFFER_KB=256 -DOPTIMAS_TRACE_DEVICE_BUFFERS=1
build buf1m-flush50 -DOPTIMAS_TRACE_BUFFER_KB=1024 -DOPTIMAS_TRACE_FLUSH_MS=50
ls "$out"
