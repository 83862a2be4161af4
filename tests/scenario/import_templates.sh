# The windows example's profile recorded on the H200 (tests/data/h200/windows): a kernel template
# with five instances and one with two, each instance launched several times, names such as
# "void window_variance_kernel<float, (int)128>(const int *, const int *, T1 *, T1 *, int, int)".
# Every source block must land on a launch of its own instance, and every hot instance must get
# its own roofline and PC stalls. Skipped until the profile is recorded (tests/data/h200/README.md).
source "$(dirname "$0")/lib.sh"

D=${OPTIMAS_TEMPLATE_PROFILE:-$OPTIMAS_TEST_DATA/h200/windows}
[ -f "$D/manifest.json" ] || skip "no recorded profile of examples/windows in $D: record it on the H200 with RECORD_EXAMPLES=windows bash scripts/device-record.sh (tests/data/h200/README.md)"

"$OPTIMAS" -q profile --import "$D" --json --all-metrics > "$WORK/p.json" || fail "import failed"
json_check "$WORK/p.json" '[r["config"] for r in d["runs"]] == ["small", "default"]' "two runs, small and default"
# The names are those of real template instances: five of one template in each timing pass
# (the tracer's spelling or ncu's), a comma in the other's arguments, and ncu's "(int)N" in the
# heavy pass.
json_check "$WORK/p.json" \
  'all(len({l["kernel"].replace(" ", "") for l in d["timing"] if l["run"] == r and l["kernel"].startswith("moving_sum_kernel<")}) == 5 for r in (0, 1))' \
  "five moving_sum_kernel instances in each timing pass"
json_check "$WORK/p.json" 'any(l["kernel"].replace(" ", "").startswith("window_variance_kernel<float,") for l in d["timing"])' \
  "a template instance with a comma in its arguments"
# ncu 2025.3.1 spells these "void moving_sum_kernel<32>(const int *, int *, int, bool)", the
# tracer "void moving_sum_kernel<32>(int const*, int*, int, bool)": the profiled instances carry
# ncu's spelling in the heavy pass and in the timing pass alike.
json_check "$WORK/p.json" 'all("(const int *, int *, int, bool)" in l["demangled"] for l in d["launches"] if l["kernel"].startswith("moving_sum_kernel<"))' \
  "ncu's spelling of the instances in the heavy pass"
json_check "$WORK/p.json" '{l["demangled"] for l in d["launches"]} <= {l["demangled"] for l in d["timing"]}' \
  "traced launches of the profiled instances take ncu's names"
# Every block has a launch of the same instance and the same samples; every launch has a block.
json_check "$WORK/p.json" 'len(d["sources"]) == len(d["launches"]) > 0' "a source block per launch"
json_check "$WORK/p.json" \
  'all([(l["demangled"], l["metrics"]["smsp__pcsamp_sample_count"]["value"]) for l in d["launches"] if l["run"] == s["run"] and l["id"] == s["result_id"]] == [(s["demangled"], s["total_samples"])] for s in d["sources"])' \
  "each block matches its own launch: instance and sample count"
json_check "$WORK/p.json" \
  'all(max([l["demangled"] for l in d["launches"] if l["run"] == r].count(k) for k in {l["demangled"] for l in d["launches"] if l["run"] == r}) >= 2 for r in (0, 1))' \
  "an instance profiled several times in each run"

# The analysis keeps the instances apart: each hot instance has its own roofline and PC lines.
for config in small default; do
  "$OPTIMAS" -q analyze "$D" --input "$config" --json > "$WORK/a-$config.json" || fail "analyze $config failed"
  json_check "$WORK/a-$config.json" 'sum(k["kernel"].startswith("moving_sum_kernel<") for k in d["kernels"]) >= 2' \
    "$config: two or more hot moving_sum_kernel instances"
  json_check "$WORK/a-$config.json" 'all(k["roofline"] and k["stalls"] and k["stalls"]["total_samples"] > 0 for k in d["kernels"])' \
    "$config: every hot instance has its roofline and PC samples"
done
pass "template instances of the recorded windows profile import and analyze apart"
