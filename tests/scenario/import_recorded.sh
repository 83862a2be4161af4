# Every example's profile recorded on the H200 imports, and its numbers hang together.
source "$(dirname "$0")/lib.sh"

for dir in "$OPTIMAS_TEST_DATA"/h200/*/; do
  ex=$(basename "$dir")
  "$OPTIMAS" -q profile --import "$dir" --json --all-metrics > "$WORK/$ex.json" || fail "$ex: import failed"
  json_check "$WORK/$ex.json" '[r["config"] for r in d["runs"]] == [r["config"] for r in d["manifest"]["runs"]] and len(d["runs"]) >= 1' \
    "$ex: the manifest's runs"
  json_check "$WORK/$ex.json" 'all(l["duration_ns"] > 0 for l in d["launches"] + d["timing"])' "$ex: durations"
  json_check "$WORK/$ex.json" 'len(d["sources"]) == len(d["launches"]) > 0' "$ex: a source block per launch"
  json_check "$WORK/$ex.json" 'all(sum(l["stalls"].values()) == l["samples"] for s in d["sources"] for l in s["lines"])' \
    "$ex: line stalls sum to the line's samples"
  json_check "$WORK/$ex.json" \
    'all(s["total_samples"] == [l for l in d["launches"] if l["run"] == s["run"] and l["id"] == s["result_id"]][0]["metrics"]["smsp__pcsamp_sample_count"]["value"] for s in d["sources"])' \
    "$ex: per-kernel samples equal smsp__pcsamp_sample_count"
  json_check "$WORK/$ex.json" 'all(l["kernel"] in d["manifest"]["runs"][l["run"]]["hot_kernels"] for l in d["launches"])' \
    "$ex: only hot kernels got the heavy pass"
  # The hot set printed at recording time is the one recomputed from the timing pages.
  json_check "$WORK/$ex.json" \
    'all(sorted(k["kernel"] for k in r["hot_kernels"]["kernels"] if k["hot"]) == sorted(m["hot_kernels"]) for r, m in zip(d["runs"], d["manifest"]["runs"]))' \
    "$ex: hot kernels"
done
pass "recorded H200 profiles of $(ls "$OPTIMAS_TEST_DATA/h200" | grep -vc README) examples"
