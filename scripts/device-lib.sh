#!/usr/bin/env bash
# Sourced by the scripts/device-*.sh scripts on a GPU machine, from the repository root, after
# scripts/device-pack.sh packed optimas on the build machine.

# optimas from .device/bin first on PATH; its libraries, then CUPTI's (the tracer needs it), on
# LD_LIBRARY_PATH. CUPTI_DIR names CUPTI's folder (empty where none was found).
device_env() {
  local root=${1:-$PWD} found
  found=$(find /usr/local /opt -name 'libcupti.so.*' 2>/dev/null | head -1)
  CUPTI_DIR=${found:+$(dirname "$found")}
  export PATH="$root/.device/bin:$PATH"
  export LD_LIBRARY_PATH="$root/.device/lib${CUPTI_DIR:+:$CUPTI_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# save_results DIR TGZ: DIR packed into TGZ through a temporary name, so that a call stopped at
# its limit keeps the last whole archive (the device returns only a few files per call, so
# results travel as one archive rewritten after each step).
save_results() {
  tar czf "$2.$BASHPID.part" -C "$1" . && mv -f "$2.$BASHPID.part" "$2"
}
