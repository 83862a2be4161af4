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
# --alpha decides the hot set of an import too (it was ignored): a larger share takes in more kernels.
"$OPTIMAS" -q profile --import "$OPTIMAS_TEST_DATA/h200/stream" --json --alpha 0.3 > "$WORK/alpha-low.json"
"$OPTIMAS" -q profile --import "$OPTIMAS_TEST_DATA/h200/stream" --json --alpha 1 > "$WORK/alpha-all.json"
json_check "$WORK/alpha-low.json" 'all(r["hot_kernels"]["alpha"] == 0.3 for r in d["runs"])' "--alpha 0.3 is the JSON's alpha"
python3 - "$WORK/alpha-low.json" "$WORK/alpha-all.json" <<'PY' || fail "--alpha does not change the import's hot set"
import json, sys
hot = lambda f: [sum(k["hot"] for k in r["hot_kernels"]["kernels"]) for r in json.load(open(f))["runs"]]
low, every = hot(sys.argv[1]), hot(sys.argv[2])
sys.exit(0 if all(a < b for a, b in zip(low, every)) else 1)
PY
"$OPTIMAS" -q profile --import "$OPTIMAS_TEST_DATA/h200/stream" --alpha 1 > "$WORK/alpha-all.txt"
"$OPTIMAS" -q profile --import "$OPTIMAS_TEST_DATA/h200/stream" --alpha 0.3 > "$WORK/alpha-low.txt"
[ "$(grep -c '  hot$' "$WORK/alpha-all.txt")" -gt "$(grep -c '  hot$' "$WORK/alpha-low.txt")" ] ||
  fail "--alpha does not change the import's summary"
pass "recorded H200 profiles of $(ls "$OPTIMAS_TEST_DATA/h200" | grep -vc README) examples"
