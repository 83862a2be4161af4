# optimas profile --import on the reference exports: the issue's acceptance check.
source "$(dirname "$0")/lib.sh"

"$OPTIMAS" profile --import "$OPTIMAS_TEST_DATA/ncu-samples" --json > "$WORK/p.json"
json_check "$WORK/p.json" '[l["duration_ns"] for l in d["launches"] if l["kernel"] == "dloop"] == [353024, 352960]' \
  "dloop launches are 353024 and 352960 ns"
json_check "$WORK/p.json" '[l["duration_ns"] for l in d["launches"] if l["kernel"] == "saxpy"] == [62368, 61664]'
json_check "$WORK/p.json" 'sorted({s["kernel"] for s in d["sources"]}) == ["dloop", "saxpy"]' "per-line stalls for both kernels"
json_check "$WORK/p.json" 'all(sum(l["stalls"].values()) == l["samples"] for s in d["sources"] for l in s["lines"])' \
  "per-line stall columns sum to the line's samples"
json_check "$WORK/p.json" '[l for s in d["sources"] if s["result_id"] == 0 for l in s["lines"] if l["line"] == 4][0]["stalls"]["stall_long_scoreboard"] == 4613'

# The text summary names the hot kernel.
"$OPTIMAS" profile --import "$OPTIMAS_TEST_DATA/ncu-samples" > "$WORK/p.txt" 2>/dev/null
grep -qE '^  dloop +2 +705\.984 +85\.1%  hot' "$WORK/p.txt" || fail "summary: $(cat "$WORK/p.txt")"

# --out is not needed for folders; a single page imports too.
"$OPTIMAS" -q profile --import "$OPTIMAS_TEST_DATA/ncu-samples/raw_base.csv" --json > "$WORK/raw.json"
json_check "$WORK/raw.json" 'len(d["launches"]) == 4 and d["sources"] == []'
pass "import of the reference exports"
