#!/usr/bin/env bash
# The fuzz tests: builds the libFuzzer harnesses of tests/fuzz into build-fuzz (clang, engine
# under ASan+UBSan) and runs each for FUZZ_SECONDS (default 12) from its committed corpus.
# scripts/test.sh runs this after the main suite; without clang it says so and skips.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
cxx=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [ -z "$cxx" ]; then
  echo "fuzz: skipped: no clang++ (install clang-14 and libclang-rt-14-dev, see scripts/deps-debian.txt)"
  exit 0
fi
# The libFuzzer runtime is a package of its own (libclang-rt-14-dev): check that it links.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz: skipped: $cxx cannot link a libFuzzer program (install libclang-rt-14-dev):"
  sed 's/^/  /' "$probe/err" | head -5
  exit 0
fi
cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DOPTIMAS_FUZZ=ON -DOPTIMAS_FUZZ_SECONDS="${FUZZ_SECONDS:-12}" >/dev/null
cmake --build "$FUZZ_BUILD_DIR" -j "$(nproc)" --target fuzz_all
ctest --test-dir "$FUZZ_BUILD_DIR" -L fuzz --output-on-failure -j "$(nproc)"
