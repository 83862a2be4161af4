#!/usr/bin/env bash
# Packs what the scripts/device-*.sh scripts need on a GPU machine that has CUDA but none of our
# Debian libraries: build/src/optimas and liboptimas-trace.so into .device/bin, the shared
# libraries they use into .device/lib. The C and C++ runtimes stay behind: the GPU machine's
# own are newer, and programs built there do not start with Debian's. (.device is not tracked.)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device
mkdir -p .device/bin .device/lib
cp build/src/optimas .device/bin/
strip .device/bin/optimas # debug info is most of its size; the carried tree is capped
[ -f build/src/liboptimas-trace.so ] && cp build/src/liboptimas-trace.so .device/bin/
ldd build/src/optimas | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    *) cp -L "$lib" .device/lib/ ;;
  esac
done
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
du -sh .device
