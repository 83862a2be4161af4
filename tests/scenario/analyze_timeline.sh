# optimas analyze and profile --import on a profile whose timing pass left a format-3 trace (the
# synthetic sync-copy trace of tests/data/trace-v3, written to the format, not recorded): the AP
# items in the text and the JSON, the timeline in the profile's JSON, and a bad line's error.
source "$(dirname "$0")/lib.sh"

P="$WORK/profile"
mkdir -p "$P"
cp -r "$OPTIMAS_TEST_DATA/trace-v3/sync-copy" "$P/trace"
echo '{"runs": [{"config": "default", "pages": {"trace": "trace"}}]}' > "$P/manifest.json"

"$OPTIMAS" -q analyze "$P" > "$WORK/a.txt" || fail "analyze failed: $(cat "$WORK/a.txt")"
grep -q '^== The application (timeline of the timing pass: GPU busy 24.5% of 24.2 ms)' "$WORK/a.txt" ||
  fail "no application section: $(cat "$WORK/a.txt")"
grep -q '^\[AP1\] GPU idle 75% of the run' "$WORK/a.txt" || fail "AP1: $(grep AP1 "$WORK/a.txt")"
grep -q '^\[AP2\] GPU idle 61% of the run in 49 host gaps .*50 synchronous device-to-host copies of 4 B, one after each launch of step_kernel \[gain if .*of the wall time' \
  "$WORK/a.txt" || fail "AP2: $(grep AP2 "$WORK/a.txt")"

"$OPTIMAS" -q analyze "$P" --json > "$WORK/a.json" || fail "analyze --json failed"
json_check "$WORK/a.json" '[e["id"] for e in d["evidence"] if e["kind"] == "application"] == ["AP1", "AP2", "AP3", "AP4", "AP5"]'
json_check "$WORK/a.json" 'all(e["kernel"] == "" and 0 <= e["saved"] < 1 for e in d["evidence"] if e["kind"] == "application")'
json_check "$WORK/a.json" 'd["timeline"]["gap_groups"][0]["count"] == 49 and abs(d["application_headroom"] - (1 - 5000 / 24250)) < 1e-9'
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  /usr/bin/python3 - "$OPTIMAS_SOURCE_DIR/docs/diagnostics.schema.json" "$WORK/a.json" <<'PY' || fail "schema"
import json, sys, jsonschema
schema, doc = (json.load(open(p)) for p in sys.argv[1:])
jsonschema.validate(doc, schema)
PY
fi

"$OPTIMAS" -q profile --import "$P" --json > "$WORK/p.json" || fail "profile --import failed"
json_check "$WORK/p.json" 'd["runs"][0]["timeline"]["traffic"][0]["direction"] == "DtoH" and d["runs"][0]["timing_launch_count"] == 50'

# A bad line of the trace: the error names the file and line.
sed -i 's/^M\tDtoH\tdevice\tpageable\t4\t/M\tDtoH\tdevice\tpaged\t4\t/' "$P"/trace/trace-100.tsv
out=$("$OPTIMAS" -q analyze "$P" 2>&1) && fail "a bad trace line was accepted"
grep -q 'trace-100.tsv:8: the destination memory "paged" is not one the tracer writes' <<< "$out" || fail "the error: $out"
pass "analyze shows the AP items of a format-3 trace, profile --import its timeline"
