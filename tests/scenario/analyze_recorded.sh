# optimas analyze on every recorded H200 profile: the JSON validates against its schema,
# evidence IDs are unique, summaries stay small, and source selection works.
source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
$PY -c 'import jsonschema' 2>/dev/null || skip "Debian's python3-jsonschema is not installed (scripts/install-deps.sh)"
SCHEMA="$OPTIMAS_SOURCE_DIR/docs/diagnostics.schema.json"

for dir in "$OPTIMAS_TEST_DATA"/h200/*/; do
  ex=$(basename "$dir")
  "$OPTIMAS" -q analyze "$dir" --json > "$WORK/$ex.json" || fail "$ex: analyze failed"
  $PY - "$SCHEMA" "$WORK/$ex.json" <<'PY' || fail "$ex: schema"
import json, sys, jsonschema
schema, doc = (json.load(open(p)) for p in sys.argv[1:])
jsonschema.validate(doc, schema)
PY
  json_check "$WORK/$ex.json" 'len({e["id"] for e in d["evidence"]}) == len(d["evidence"]) > 0' "$ex: unique evidence IDs"
  json_check "$WORK/$ex.json" 'all(k["stalls"]["summary_bytes"] <= 6144 for k in d["kernels"])' "$ex: PC summaries within 6 KB"
  json_check "$WORK/$ex.json" 'abs(sum(k["share"] for k in d["all_kernels"]) - 1) < 1e-9 and sum(k["share"] for k in d["kernels"]) >= 0.8' \
    "$ex: hot kernels cover alpha of the time"
  json_check "$WORK/$ex.json" 'all(k["roofline"]["id"] in {e["id"] for e in d["evidence"]} for k in d["kernels"])' "$ex: RF cited"
  "$OPTIMAS" -q analyze "$dir" > "$WORK/$ex.txt"
  grep -q '^\[RF1\] Roofline: Compute ' "$WORK/$ex.txt" || fail "$ex: text summary: $(head -20 "$WORK/$ex.txt")"
done

# The paper's seven subsets select sources; the baseline cannot be asked for by mistake.
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/sobol" --diagnostics pc --json > "$WORK/pc.json"
json_check "$WORK/pc.json" 'd["sources"] == "PC" and {e["kind"] for e in d["evidence"]} == {"pc"}'
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/sobol" --diagnostics ia,roofline --json > "$WORK/iarf.json"
json_check "$WORK/iarf.json" 'd["sources"] == "IA+Roofline" and {e["kind"] for e in d["evidence"]} == {"ia", "roofline"}'
expect_fail 2 'unknown diagnostic source "flops"' -- "$OPTIMAS" analyze "$OPTIMAS_TEST_DATA/h200/sobol" --diagnostics pc,flops
expect_fail 2 'no run for input configuration "huge"' -- "$OPTIMAS" analyze "$OPTIMAS_TEST_DATA/h200/sobol" --input huge
# --estimate: the combined gain bound of the items named, each item's own beside it: together at
# least the largest alone (the savings add up, to at most the kernel's headroom); an unknown ID is
# an error that lists the known.
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/spmv" --estimate PC1,RF1 --json > "$WORK/est.json"
json_check "$WORK/est.json" 'set(d["estimate"]["evidence"]) == {"PC1", "RF1"} and 1 < max(d["estimate"]["evidence"].values()) <= d["estimate"]["gain"] + 1e-12 < 1e6' \
  "the estimate of PC1 and RF1: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["estimate"])' "$WORK/est.json")"
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/spmv" --estimate PC1,RF1 > "$WORK/est.txt"
grep -qE '^Estimated gain of PC1, RF1 together: at most [0-9.]+x \(PC1 [0-9.]+x, RF1 [0-9.]+x\)$' "$WORK/est.txt" ||
  fail "the estimate in words: $(tail -2 "$WORK/est.txt")"
# An item named twice saves its time once (edges' PC1 alone is well under its kernel's headroom).
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/edges" --estimate PC1 --json > "$WORK/once.json"
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/edges" --estimate PC1,PC1 --json > "$WORK/twice.json"
json_check "$WORK/twice.json" 'd["estimate"]["gain"] == '"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["estimate"]["gain"])' "$WORK/once.json")"' and d["estimate"]["gain"] > 1' \
  "an item named twice counts once: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["estimate"])' "$WORK/twice.json")"
expect_fail 2 'no evidence item PC99 .*\(it has .*RF1' -- "$OPTIMAS" analyze "$OPTIMAS_TEST_DATA/h200/spmv" --estimate PC99
# Deterministic for a seed.
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/stencil" --json --seed 7 > "$WORK/a.json"
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/stencil" --json --seed 7 > "$WORK/b.json"
cmp -s "$WORK/a.json" "$WORK/b.json" || fail "analyze is not deterministic for a seed"
pass "analyze on $(ls -d "$OPTIMAS_TEST_DATA"/h200/*/ | wc -l) recorded profiles"
