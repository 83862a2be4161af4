# The tuning stage on a host stand-in (tests/scenario/tune-app, built by host-nvcc, which reads
# NVCC_APPEND_FLAGS as nvcc does). Its CHUNK macro sets how much setup work each output costs, so
# the tuner must find the fastest value (256); CHUNK 3 drops outputs and must be rejected as not
# bit-identical; CHUNK 4 is the source's default and builds the parent's binary, so it is never
# measured, nor is a flag host-nvcc ignores (-Xptxas -dlcm=ca) on it. Checked here:
#   - the dry run lists the points of the exhaustive search with what their builds are given;
#   - --tune-only measures each point as a variant (validation on every configuration, held-out
#     included; the acceptance rule), the build log shows the point's macro reached the compiler,
#     and the run's result.json holds every point with values, built, valid, speedup and interval;
#   - a second run measures nothing: every point comes from the cache;
#   - after an accepted edit, the stage tunes the variant's sources against the variant;
#   - fast math is refused unless allowed, naming the file and line.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/tune-app"
RUNS="$WORK/runs"
source "$(dirname "$0")/loop_lib.sh"
# app (the edited case): 20 repetitions on default, about 100 ms a run, so that the edit's saving
# (about half) stands out of a loaded machine's noise; at 5 its interval once reached 0.99x.
new_app app 's/{name: default, n: 16384, reps: 5,/{name: default, n: 16384, reps: 20,/'
grep -q 'reps: 20, seed: 42' "$WORK/app/optimas.yml" || fail "the default configuration was not edited"
# The tuning stage alone runs on the stand-in as the edit below leaves it (add_kernel's idle
# chain removed), so that the chunk's setup is most of the time and CHUNK 256 beats 64 by far.
new_app lean
python3 "$OPTIMAS_SOURCE_DIR/tests/scenario/tune-app/lean.py" "$WORK/lean/main.cu"

# points FILE PYTHON: evaluates PYTHON with `t` = the run's tune record and `p` = its points by CHUNK
# and dlcm ("CHUNK=4 dlcm=none" -> point).
points() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["tune"]
p = {f'{x["values"]["CHUNK"]} {x["values"]["dlcm"] or "none"}': x for x in t["points"]}
print(eval(sys.argv[2]))
PY
}

# --- The dry run --------------------------------------------------------------------------
"$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --dry-run > "$WORK/dry.out" || fail "dry run: exit $?"
[ "$(grep -c '^    point  ' "$WORK/dry.out")" -eq 10 ] || fail "dry run: 10 points expected:"$'\n'"$(cat "$WORK/dry.out")"
grep -q 'point  CHUNK=64 dlcm=-Xptxas -dlcm=ca  \[-DCHUNK=64 -Xptxas -dlcm=ca\]' "$WORK/dry.out" ||
  fail "dry run: a point and its build flags:"$'\n'"$(cat "$WORK/dry.out")"
grep -q 'method=exhaustive' "$WORK/dry.out" || fail "dry run: an exhaustive search of 10 points"
! grep -qE '^  (profile|optimize)' "$WORK/dry.out" || fail "dry run: --tune-only profiles and edits nothing"
[ ! -e "$RUNS" ] || fail "dry run: it created $RUNS"

# --- The tuning stage alone ----------------------------------------------------------------
tune_run() { # NAME [OPTIONS...]: optimas run --tune-only; sets rc and json
  local name=$1
  shift
  rc=0
  "$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --cache-dir "$WORK/cache" --tune-only --runs 8 --json "$@" \
    > "$WORK/$name.json" 2> "$WORK/$name.log" || rc=$?
  json="$WORK/$name.json"
  [ -s "$json" ] || fail "$name: no result (exit $rc)"$'\n'"$(tail -30 "$WORK/$name.log")"
  echo "$name: exit $rc; $(points "$json" '"; ".join(k + " " + x["status"] + (" %.2fx" % x["speedup"] if x["speedup"] else "") for k, x in p.items())')"
}
tune_run first
[ "$rc" -eq 0 ] || fail "first: exit $rc, expected 0 (a point is faster)"$'\n'"$(tail -30 "$WORK/first.log")"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$json")
[ "$(points "$json" 't["method"], t["parent"], len(t["points"]), t["allowed"]')" = "('exhaustive', 'baseline', 10, 10)" ] ||
  fail "first: an exhaustive search of all 10 points from the baseline: $(points "$json" 't')"
[ "$(points "$json" 'all(set(x) >= {"values", "built", "valid", "speedup", "ci", "accepted"} for x in p.values())')" = True ] ||
  fail "first: every point has values, built, valid, speedup, ci and accepted"
# CHUNK 3 drops the last outputs: built, not bit-identical, never measured.
[ "$(points "$json" '[(p[k]["built"], p[k]["valid"], p[k]["status"], p[k]["speedup"]) for k in ("3 none", "3 -Xptxas -dlcm=ca")]')" = \
  "[(True, False, 'validation_failed', None), (True, False, 'validation_failed', None)]" ] ||
  fail "first: CHUNK 3 must fail validation: $(points "$json" 'p["3 none"]')"
# CHUNK 4 is the parent's own binary (with or without a flag host-nvcc drops): not measured.
[ "$(points "$json" '[(p[k]["built"], p[k]["status"]) for k in ("4 none", "4 -Xptxas -dlcm=ca")]')" = \
  "[(False, 'build_stale'), (False, 'build_stale')]" ] || fail "first: CHUNK 4 is the parent's build: $(points "$json" 'p["4 none"]')"
[ ! -e "$RUNS/$id/tune/t5/measurements.jsonl" ] || fail "first: a stale point was measured"
# CHUNK 1 is slower: measured and rejected. 64 and 256 are faster; 256 the fastest.
[ "$(points "$json" 'all(p[k]["status"] == "rejected" and p[k]["speedup"] < 1 and p[k]["valid"] for k in ("1 none", "1 -Xptxas -dlcm=ca"))')" = True ] ||
  fail "first: CHUNK 1 must be measured slower and rejected: $(points "$json" 'p["1 none"]')"
[ "$(points "$json" 'all(p[k]["accepted"] and p[k]["ci"][0] > 1.01 for k in ("64 none", "256 none", "256 -Xptxas -dlcm=ca"))')" = True ] ||
  fail "first: CHUNK 64 and 256 must be accepted: $(points "$json" '[p["64 none"], p["256 none"]]')"
best=$(points "$json" '[x["values"]["CHUNK"] for x in t["points"] if x["key"] == t["best"]][0]')
[ "$best" = 256 ] || fail "first: the best point has CHUNK $best, not 256"
json_check "$json" 'd["outcome"] == "improved" and d["speedup"] > 1' "first: the run improved, with the best point's speedup"
# Every point was built with its macro, from a fresh copy (the build log shows the compile).
for k in 1 2 3 4 5 6 7 8 9 10; do
  flags=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["flags"])' "$RUNS/$id/tune/t$k/result.json")
  grep -qF -- "host-nvcc: g++ -x c++ -O2 -o tuned main.cu ${flags%% -Xptxas*}" "$RUNS/$id/tune/t$k/build.log" ||
    fail "t$k: the build did not get $flags:"$'\n'"$(cat "$RUNS/$id/tune/t$k/build.log")"
done
# Validated on every configuration, the held-out one included, before it was measured.
json_check "$RUNS/$id/tune/t10/result.json" 'any(c["held_out"] and c["passed"] for c in d["validation"]["checks"]) and "confirmation" in d["measurement"]' \
  "t10: validated on the held-out configuration and confirmed by fresh runs"
json_check "$RUNS/$id/run.json" 'len(d["tune"]["points"]) == 10' "run.json keeps the tuning stage"

# --- A second run: nothing is measured twice -------------------------------------------------
tune_run again
[ "$rc" -eq 0 ] || fail "again: exit $rc"$'\n'"$(tail -30 "$WORK/again.log")"
[ "$(points "$json" 'all(x["cached"] for x in t["points"])')" = True ] || fail "again: every point should come from the cache"
[ "$(points "$json" '[x["values"]["CHUNK"] for x in t["points"] if x["key"] == t["best"]][0]')" = 256 ] || fail "again: the same best point"
again_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$json")
! ls "$RUNS/$again_id"/tune/*/measurements.jsonl 2>/dev/null | grep -q . || fail "again: a cached point was measured again"
! ls "$RUNS/$again_id"/tune/*/build.log 2>/dev/null | grep -q . || fail "again: a cached point was built again"
[ -n "$(find "$WORK/cache/tune" -name '*.json')" ] || fail "the cache is not in --cache-dir/tune"
# Under the other verdict rule (a confirmation's --verdict fixed), no figure comes from the cache.
tune_run fixed --verdict fixed
[ "$rc" -eq 0 ] || fail "fixed: exit $rc"$'\n'"$(tail -30 "$WORK/fixed.log")"
[ "$(points "$json" 'any(x["cached"] for x in t["points"])')" = False ] || fail "fixed: a point judged by the other verdict rule came from the cache"
# --tune-point: the best point alone, measured afresh (how a confirmation re-measures a tuned
# best without searching again); a name that is no point says how points are named.
"$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --tune-point "CHUNK=256 dlcm=none" --dry-run \
  > "$WORK/dry-point.out" || fail "dry run with --tune-point: exit $?"
[ "$(grep -c '^    point  ' "$WORK/dry-point.out")" -eq 1 ] && grep -q 'point  CHUNK=256 dlcm=none  \[-DCHUNK=256\]' "$WORK/dry-point.out" ||
  fail "dry run with --tune-point: one point expected:"$'\n'"$(cat "$WORK/dry-point.out")"
tune_run point --verdict fixed --no-cache --tune-point "CHUNK=256 dlcm=none"
[ "$rc" -eq 0 ] || fail "point: exit $rc"$'\n'"$(tail -30 "$WORK/point.log")"
[ "$(points "$json" 't["method"], len(t["points"]), t["best"], t["points"][0]["point"], t["points"][0]["cached"], t["points"][0]["accepted"]')" = \
  "('point', 1, 't1', 'CHUNK=256 dlcm=none', False, True)" ] || fail "point: the one point, measured afresh and accepted: $(points "$json" 't')"
expect_fail 2 '--tune-point "CHUNK=512 dlcm=none" is not a point of the tuning space \(10 allowed; they are named like "CHUNK=1 dlcm=none"' -- \
  "$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --tune-point "CHUNK=512 dlcm=none" --dry-run
# A run, not a dry run, refuses it before any work: no run is recorded.
ls "$RUNS" > "$WORK/runs-before.txt"
expect_fail 2 '--tune-point "CHUNK=512 dlcm=none" is not a point of the tuning space' -- \
  "$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --tune-point "CHUNK=512 dlcm=none"
ls "$RUNS" | diff -q "$WORK/runs-before.txt" - >/dev/null || fail "a refused --tune-point left a run behind"

# --- After the edit step: the variant's sources, against the variant --------------------------
ADD='    // 256 dependent multiply-adds whose result nothing uses: t waits for them, unchanged.
    unsigned long h = static_cast<unsigned long>(i);
    for (int r = 0; r < 256; ++r) {
      h = h * 6364136223846793005ul + 1442695040888963407ul;
      asm volatile("" : "+r"(h));
    }
    double t = a[i] + b[i];
    asm volatile("" : "+x"(t) : "r"(h));
    c[i] = t;'
grep -qF "$ADD" "$WORK/app/main.cu" || fail "the reply's find text is not in main.cu"
reply honest add_kernel PC1,RF1 "$ADD" '    c[i] = a[i] + b[i];'
loop edited "$WORK/app" "$WORK/replies/honest.json" --runs 8 --tune-search exhaustive --tune-budget 2
expect edited i1a1 accepted 'faster on default' 0
json_check "$run_json" 'd["tune"]["parent"] == "i1a1" and len(d["tune"]["points"]) == 2' \
  "edited: the tuning stage starts from the accepted variant: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tune"])' "$run_json")"
cmp -s "$RUNS/$id/tune/t1/src/main.cu" "$RUNS/$id/iterations/1/attempt-1/src/main.cu" ||
  fail "edited: the tuning point was not built from the variant's sources"
json_check "$RUNS/$id/tune/t1/result.json" 'd["parent"] == "i1a1" and d["measurement"]["speedup"] < 1' \
  "edited: CHUNK 1 measured against the variant (slower)"

# --- Fast math is refused unless allowed ------------------------------------------------------
new_app fast 's|dlcm: \["", "-Xptxas -dlcm=ca"\]|dlcm: ["", "--use_fast_math"]|'
grep -q use_fast_math "$WORK/fast/optimas.yml" || fail "the flag was not changed"
expect_fail 2 'optimas.yml:[0-9]+: tune.flags.dlcm: --use_fast_math changes floating-point results' -- \
  "$OPTIMAS" run --app "$WORK/fast" --runs-dir "$RUNS" --tune-only --dry-run
pass "the tuning stage: points built with their macros, CHUNK 3 rejected, the fastest found, cached, after the edit step"
