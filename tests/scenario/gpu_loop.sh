# On a GPU (label "gpu"; skipped elsewhere): `optimas run` with the builtin backend on every
# example program — baseline, profile, analyze, edits, build, validation on every configuration
# and fresh seeds, interleaved measurement, re-profile, EAR — and the table of results.
#   OPTIMAS_GPU_EXAMPLES   examples to run (default: all ten)
#   OPTIMAS_GPU_IMPORT=1   start from the profiles recorded in tests/data/h200 instead of profiling
#   OPTIMAS_GPU_MEASURE    configurations to measure (default: default,heldout)
#   OPTIMAS_GPU_OUT        folder for the run store and the table (default: a temporary one)
source "$(dirname "$0")/lib.sh"

command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU || skip "no NVIDIA GPU here"
command -v ncu >/dev/null || skip "ncu (Nsight Compute) not on PATH"
command -v nvcc >/dev/null || skip "nvcc not on PATH"

OUTDIR=${OPTIMAS_GPU_OUT:-$WORK/out}
mkdir -p "$OUTDIR"
RUNS="$OUTDIR/runs"
TABLE="$OUTDIR/table.md"
echo "| program | outcome | variant | verdict | speedup [95% CI] | p | coverage | localisation | direction | implemented / withheld / hallucinations |" > "$TABLE"
echo "|---|---|---|---|---|---|---|---|---|---|" >> "$TABLE"
failed=0
for ex in ${OPTIMAS_GPU_EXAMPLES:-stream accuracy shmem sobol gather stencil spmv edges windows digits echo}; do
  cp -r "$OPTIMAS_SOURCE_DIR/examples/$ex" "$WORK/$ex"
  args=(run --app "$WORK/$ex" --runs-dir "$RUNS" --json --measure-configs "${OPTIMAS_GPU_MEASURE:-default,heldout}")
  [ "${OPTIMAS_GPU_IMPORT:-0}" = 1 ] && args+=(--import "$OPTIMAS_TEST_DATA/h200/$ex")
  rc=0
  "$OPTIMAS" "${args[@]}" > "$OUTDIR/$ex.json" 2> "$OUTDIR/$ex.log" || rc=$?
  echo "$ex: exit $rc"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    tail -5 "$OUTDIR/$ex.log"
    echo "| $ex | ERROR (exit $rc) | | | | | | | | |" >> "$TABLE"
    failed=1
    continue
  fi
  python3 - "$OUTDIR/$ex.json" "$ex" >> "$TABLE" <<'PY' || failed=1
import json, sys
run, ex = json.load(open(sys.argv[1])), sys.argv[2]
assert run["status"] == "finished" and run["execute"], "the run did not execute"
pct = lambda v: "n/a" if v is None else f"{100 * v:.0f}%"
for v in run["variants"]:
    # Every variant the builtin backend made was checked: validated (or rejected with a reason).
    assert v["status"] in ("accepted", "rejected", "validation_failed", "no_edits", "run_failed", "build_stale"), v["status"]
    if v["status"] in ("accepted", "rejected"):
        assert v["validation"]["passed"] and len(v["validation"]["checks"]) >= 4
    m, e = v.get("measurement"), v.get("ear", {})
    speed = f'{m["speedup"]:.3f}x [{m["ci"][0]:.3f}, {m["ci"][1]:.3f}]' if m else "-"
    print(f'| {ex} | {run["outcome"]} | {v["key"]}: {v["status"]} | {m["verdict"] if m else "-"} | {speed} | '
          f'{m["p_value"]:.3g} | ' if m else f'| {ex} | {run["outcome"]} | {v["key"]}: {v["status"]} | - | - | - | ', end="")
    print(f'{pct(e.get("evidence_coverage"))} | {pct(e.get("localization_agreement"))} | '
          f'{pct(e.get("directional_consistency"))} | {e.get("implemented", 0)} / {e.get("withheld", 0)} / '
          f'{e.get("hallucinations", 0)} |')
PY
done
cat "$TABLE"
[ "$failed" = 0 ] || fail "a run did not complete"
pass "optimas run completed on every example"
