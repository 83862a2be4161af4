#!/usr/bin/env bash
# The variant pipeline's saving (issue #51): the tuning stage of the host stand-in
# (tests/scenario/tune-app, lean as scenario.tune_pipeline makes it; no GPU) run with 0 builds
# ahead (one at a time), 1, 2 and all (--build-jobs auto), nothing cached, 8 runs a side. Prints
# per setting the stage's wall time, the sum of its points' steps (build, validate, measure) and
# the ratio. Goal: with builds made ahead, the wall time at most 80% of the steps on the 2-core
# machine, and the same verdicts as one build at a time.
# Usage: bench/pipeline.sh [OPTIMAS] [REPEATS]   (default: build/src/optimas, 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
optimas=${1:-$root/build/src/optimas}
repeats=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/tests/scenario/tune-app" "$work/lean"
python3 "$root/tests/scenario/tune-app/lean.py" "$work/lean/main.cu"
printf '%-6s %-6s %9s %9s %7s  %s\n' jobs lanes wall_s steps_s ratio verdicts
for ((r = 0; r < repeats; ++r)); do
  for jobs in 0 1 2 auto; do
    "$optimas" run --app "$work/lean" --runs-dir "$work/runs" --tune-only --runs 8 --no-cache --build-jobs "$jobs" \
      --json > "$work/out.json" 2> "$work/log" || { tail -20 "$work/log"; exit 1; }
    python3 - "$work/out.json" "$jobs" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["tune"]
o = t["overlap"]
v = " ".join(f'{x["values"]["CHUNK"]}:{x["status"][:4]}' + (f':{x["speedup"]:.2f}x' if x["speedup"] else "") for x in t["points"])
print(f'{sys.argv[2]:<6} {o["lanes"]:<6} {o["wall_s"]:9.2f} {o["steps_s"]:9.2f} {o["wall_s"] / o["steps_s"]:7.2f}  {v}')
PY
  done
done
