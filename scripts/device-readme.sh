#!/usr/bin/env bash
# On a GPU machine, from the repository root, with optimas packed by scripts/device-pack.sh:
# tests/scenario/gpu_readme.sh (the README's commands verbatim, in a copy of the repository),
# then, where a scratch folder holds them, public applications run as a new user runs them: from
# the folder above each, `optimas run --app NAME` with the defaults and relative paths
# (PUBLIC_ARGS adds arguments, e.g. --no-tune). Everything goes into $OUT/results.tgz, rewritten
# after each step, so a call stopped at its limit keeps what finished.
#   PUBLIC      "DIR:NAME ..." (default: none), each DIR holding NAME/optimas.yml
#   PUBLIC_SECONDS  limit per public application (default 150)
#   GPU_README_MAIN_S, GPU_README_RESUME_S: see gpu_readme.sh
set -uo pipefail
OUT=${OUT:-/tmp/optimas-readme-out}
R=/tmp/optimas-readme/results
rm -rf /tmp/optimas-readme; mkdir -p "$R" "$OUT"
save() { save_results "$R" "$OUT/results.tgz"; }
source "$(dirname "$0")/device-lib.sh"
device_env
{ nvidia-smi --query-gpu=name,driver_version --format=csv; ncu --version; nvcc --version | tail -2; optimas --version; } \
  > "$R/environment.txt" 2>&1
save

echo "[$(date +%T)] gpu_readme.sh" | tee -a "$R/device.log"
start=$(date +%s)
rc=0
OPTIMAS="$PWD/.device/bin/optimas" OPTIMAS_SOURCE_DIR="$PWD" GPU_README_OUT="$R/readme" \
  bash tests/scenario/gpu_readme.sh > "$R/gpu_readme.log" 2>&1 || rc=$?
echo "gpu_readme.sh: exit $rc in $(( $(date +%s) - start )) s" | tee -a "$R/device.log"
save

for entry in ${PUBLIC:-}; do
  dir=${entry%%:*} name=${entry##*:}
  echo "[$(date +%T)] $dir: optimas run --app $name ${PUBLIC_ARGS:-}" | tee -a "$R/device.log"
  start=$(date +%s)
  rc=0
  (cd "$dir" && timeout --signal=INT --kill-after=30 "${PUBLIC_SECONDS:-150}" \
    optimas run --app "$name" ${PUBLIC_ARGS:-} --json > "$R/$name.json" 2> "$R/$name.log") || rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - start )) s" | tee -a "$R/device.log"
  id=$(ls "$dir/runs" 2>/dev/null | grep -E '^[0-9a-f-]{36}$' | tail -1)
  [ -n "$id" ] && cp "$dir/runs/$id/run.json" "$R/$name.run.json"
  save
done
