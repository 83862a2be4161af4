# A variant's re-profile where its edit made a hot kernel fast enough to leave the hot set (on the
# H200, edges' histogram after round 2): the stand-in ncu times the variant with triad_kernel at
# 1% of its recorded time, so the hot kernels of the re-profile no longer include it. The heavy
# pass profiles it anyway, as its parent's hot kernel, and the edit's expected effect on it is
# compared before and after instead of reading "unmeasured".
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

fake_ncu_recorded "$OPTIMAS_TEST_DATA/h200/stream/default"
mkdir -p "$FAKE_NCU_DATA/timing-variant"
python3 - "$FAKE_NCU_DATA/timing/raw.csv" "$FAKE_NCU_DATA/timing-variant/raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
t, k = rows[0].index("gpu__time_duration.sum"), rows[0].index("Kernel Name")
n = 0
for r in rows[2:]:
    if r[k].startswith("triad_kernel("):
        r[t] = repr(float(r[t]) / 100)
        n += 1
assert n > 0, "no triad_kernel launch in the timing page"
csv.writer(open(sys.argv[2], "w", newline=""), quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
PY
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
cd "$WORK"

rc=0
"$OPTIMAS" run --app app --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" -m manual --runs-dir runs --no-tune \
  --retries 0 --runs 5 --warmup 0 > run.out 2> run.log || rc=$?
[ "$rc" -eq 4 ] || fail "the manual run did not stop at its question (exit $rc): $(tail run.log)"
prompt=$(ls optimas-manual/prompt-*.md)
cat > "${prompt/prompt-/reply-}" <<'JSON'
{"summary": "triad repeats its work", "edits": [{"file": "main.cu", "kernel": "triad_kernel",
 "find": "for (int r = 0; r < 8; ++r) {", "replace": "for (int r = 0; r < 1; ++r) {",
 "line_start": null, "line_end": null, "new_text": null, "evidence": ["PC1"],
 "rationale": "The repetitions recompute the same value.",
 "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}], "withheld": []}
JSON
hint=$(grep -o 'continue with `[^`]*`' run.log | tail -1 | sed 's/^continue with `//; s/`$//')
[ -n "$hint" ] || fail "the waiting run does not say how to continue: $(tail run.log)"
rc=0
eval "\"\$OPTIMAS\" ${hint#optimas }" > run.out 2> run.log || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "the run ends with exit $rc: $(tail -20 run.log)"

R=$(ls -d runs/*-*-*-*-*/)
M="$R/iterations/1/attempt-1/profile/manifest.json"
[ -f "$M" ] || fail "the variant was not re-profiled: $(tail -20 run.log)"
json_check "$M" '"triad_kernel" not in d["runs"][0]["hot_kernels"] and d["runs"][0]["also_profiled"] == ["triad_kernel"]' \
  "the re-profile did not add the kernel that left the hot set: $(python3 -c 'import json,sys; r = json.load(open(sys.argv[1]))["runs"][0]; print(r["hot_kernels"], r.get("also_profiled"))' "$M")"
# Its heavy pass asked ncu for triad_kernel (the variant's: the last heavy pass of the log).
grep -- '--section' "$FAKE_NCU_LOG" | tail -1 | grep -q triad_kernel ||
  fail "the variant's heavy pass left triad_kernel out: $(grep -- '--section' "$FAKE_NCU_LOG" | tail -1)"
json_check "$R/run.json" '[e["outcome"] for e in d["variants"][0]["ear"]["effects"]] != ["unmeasured"] and d["variants"][0]["ear"]["effects"][0]["after"] is not None' \
  "the edit's expected effect was not measured after: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variants"][0]["ear"]["effects"])' "$R/run.json")"

# Its speed of light after, from the same launches (the H200's edges run showed "12% -> -").
json_check "$R/run.json" 'd["variants"][0]["speed_of_light"]["triad_kernel"].get("after") is not None' \
  "the kernel's speed of light after is missing: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variants"][0]["speed_of_light"])' "$R/run.json")"

pass "a kernel that left the hot set is re-profiled as its parent's hot kernel, and its edit's effect is compared"
