# On a GPU (label "gpu"; skipped elsewhere): build an example, profile it with the real ncu,
# and read the fresh output back, from the profile directory and from the .ncu-rep itself.
source "$(dirname "$0")/lib.sh"

command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU || skip "no NVIDIA GPU here"
command -v ncu >/dev/null || skip "ncu (Nsight Compute) not on PATH"
command -v nvcc >/dev/null || skip "nvcc not on PATH"

EX=${OPTIMAS_GPU_EXAMPLE:-stream}
cp -r "$OPTIMAS_SOURCE_DIR/examples/$EX" "$WORK/app"
rm -f "$WORK/app/$EX"
"$OPTIMAS" profile "$WORK/app" -i small -o "$WORK/prof" --launch-count 8 --json --all-metrics > "$WORK/profile.json"
"$OPTIMAS" profile --import "$WORK/prof" > "$WORK/summary.txt"
cat "$WORK/summary.txt"

json_check "$WORK/prof/manifest.json" 'd["ncu"]["version"] != "" and d["gpu"].get("name", "").startswith("NVIDIA")' "manifest names ncu and the GPU"
json_check "$WORK/prof/manifest.json" 'len(d["runs"]) == 1 and len(d["runs"][0]["hot_kernels"]) >= 1'
json_check "$WORK/profile.json" 'len(d["timing"]) > 0 and all(l["duration_ns"] > 0 for l in d["timing"])' "timing pass durations"
json_check "$WORK/profile.json" 'len(d["launches"]) > 0 and all(l["duration_ns"] > 0 for l in d["launches"])' "profiled launches"
json_check "$WORK/profile.json" 'set(l["kernel"] for l in d["launches"]) <= set(d["manifest"]["runs"][0]["hot_kernels"]) if "manifest" in d and "runs" in d["manifest"] else True'
json_check "$WORK/profile.json" 'len(d["sources"]) == len(d["launches"]) and all(s["lines"] for s in d["sources"])' "a source block per launch"
json_check "$WORK/profile.json" 'all(any(l["file"].endswith("main.cu") for l in s["lines"]) for s in d["sources"])' "lines map to main.cu"
json_check "$WORK/profile.json" 'all(sum(l["stalls"].values()) == l["samples"] for s in d["sources"] for l in s["lines"])' "line stalls sum to samples"
json_check "$WORK/profile.json" \
  'all(s["total_samples"] == [l for l in d["launches"] if l["id"] == s["result_id"]][0]["metrics"]["smsp__pcsamp_sample_count"]["value"] for s in d["sources"])' \
  "per-kernel samples equal smsp__pcsamp_sample_count"

# The directory reads back identically, and so does round 1's report exported anew by ncu (the
# directory's first launches: later rounds' IDs follow round 1's).
"$OPTIMAS" -q profile --import "$WORK/prof" --json --all-metrics --instructions > "$WORK/dir.json"
"$OPTIMAS" -q profile --import "$WORK/prof/small/report.r1.ncu-rep" --json --all-metrics --instructions > "$WORK/rep.json"
"$OPTIMAS" -q profile --import "$WORK/prof" --json --all-metrics > "$WORK/dir-brief.json"
python3 - "$WORK/profile.json" "$WORK/dir-brief.json" "$WORK/dir.json" "$WORK/rep.json" <<'PY' || fail "read-back differs"
import json, sys
fresh, brief, full, rep = (json.load(open(p)) for p in sys.argv[1:])
for k in ("runs", "launches", "timing", "sources"):
    assert fresh[k] == brief[k], "profile dir: " + k
def strip(items):
    return [{k: v for k, v in i.items() if k not in ("config", "run")} for i in items]
n1 = len(rep["launches"])
assert strip(full["launches"][:n1]) == strip(rep["launches"]), ".ncu-rep: launches"
assert strip([s for s in full["sources"] if s["result_id"] < n1]) == strip(rep["sources"]), ".ncu-rep: sources"
print("read-back identical: %d launches, %d source blocks, %d instructions" % (
    len(full["launches"]), len(full["sources"]), sum(len(s["instructions"]) for s in full["sources"])))
PY
pass "profiled $EX on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1) with ncu $(ncu --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p')"
