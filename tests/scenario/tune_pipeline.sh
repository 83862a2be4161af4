# The variant pipeline (loop/pipeline.hpp, docs/pipeline.md) on the tuning stage of the host
# stand-in (tests/scenario/tune-app, lean as tune.sh makes it): the same search run one build at
# a time (--build-jobs 0), with builds made ahead (the default), and, where builds can have
# folders of their own here (unshare), on three lanes. Checked here:
#   - every point gets the same verdict in each run (measured, stale or not valid), and the same
#     best point (CHUNK 256);
#   - the points CHUNK 4 builds the parent's own binary in every lane: a build in a lane of its
#     own is byte for byte one in work/building, or the stale check could not see it;
#   - each point records its steps (build, validate, measure, waited) and lane, run.json's
#     tune.overlap the sum against the stage's wall time;
#   - nothing of the builds made ahead is left in the run folder;
#   - under NLopt, the point it asks for second was built while the first was handled.
# How much the overlap saves, and how close each point's ratio comes to the serial run's, is
# bench/pipeline.sh's to say: timing is not checked by ctest (under a concurrent test on the
# 2-core machine, the ratios of one run against another spread from 0.68 to 1.76).
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/tune-app"
RUNS="$WORK/runs"
trap 'rm -rf "$WORK"' EXIT
cp -r "$APP" "$WORK/lean"
python3 "$OPTIMAS_SOURCE_DIR/tests/scenario/tune-app/lean.py" "$WORK/lean/main.cu"

# tune NAME JOBS: the tuning stage alone, nothing cached; $WORK/NAME.json
tune() {
  local rc=0
  "$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --runs 8 --no-cache --build-jobs "$2" --json \
    > "$WORK/$1.json" 2> "$WORK/$1.log" || rc=$?
  [ "$rc" -eq 0 ] || fail "$1: exit $rc, expected 0 (a point is faster)"$'\n'"$(tail -30 "$WORK/$1.log")"
}
# points NAME PYTHON: evaluates PYTHON with t = the run's tune record, p = its points by name,
# r = each point's result.json by name.
points() {
  python3 - "$WORK/$1.json" "$RUNS" "$2" <<'PY'
import json, sys, os
d = json.load(open(sys.argv[1]))
t = d["tune"]
p = {x["point"]: x for x in t["points"]}
r = {x["point"]: json.load(open(os.path.join(sys.argv[2], d["id"], "tune", x["key"], "result.json"))) for x in t["points"]}
print(eval(sys.argv[3]))
PY
}

tune serial 0
tune ahead auto
lanes=1
if unshare --user --map-root-user --mount true 2>/dev/null; then
  tune lanes 3
  lanes=3
fi
runs="serial ahead"
[ "$lanes" -eq 1 ] || runs="$runs lanes"

# Accepted or rejected is the measurement's, which a loaded machine moves for a point near the
# line (CHUNK 64 without a flag was accepted one build at a time and rejected ahead in one suite
# run): those compare as measured; what no timing decides (stale, not valid) compares as it is.
verdict='sorted((k, "measured" if x["status"] in ("accepted", "rejected") else x["status"]) for k, x in p.items())'
verdicts=$(points serial "$verdict")
for name in $runs; do
  [ "$(points "$name" "$verdict")" = "$verdicts" ] ||
    fail "$name: other verdicts than one build at a time: $(points "$name" "$verdict") against $verdicts"
  [ "$(points "$name" '[x["values"]["CHUNK"] for x in t["points"] if x["key"] == t["best"]][0]')" = 256 ] ||
    fail "$name: the best point is not CHUNK 256"
  [ "$(points "$name" 'all(x["status"] == "build_stale" for k, x in p.items() if k.startswith("CHUNK=4 "))')" = True ] ||
    fail "$name: CHUNK 4 is the parent's build in every lane"
  # The steps of each point built, and the stage's sum of them against its wall time.
  [ "$(points "$name" 'all({"build_s", "waited_s"} <= set(x["times"]) for x in r.values())')" = True ] ||
    fail "$name: a point without its build's and its wait's seconds"
  [ "$(points "$name" 'all("measure_s" in x["times"] for k, x in r.items() if p[k]["speedup"])')" = True ] ||
    fail "$name: a measured point without its measure's seconds"
  [ "$(points "$name" 'set(t["overlap"]) == {"steps_s", "wall_s", "saved_s", "lanes"} and t["overlap"]["steps_s"] > 0')" = True ] ||
    fail "$name: no tune.overlap in run.json"
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/$name.json")
  left=$(cd "$RUNS/$id" && ls -d ahead lanes work/ahead-* 2>/dev/null || true)
  [ -z "$left" ] || fail "$name: the builds made ahead left $left"
done
[ "$(points serial 't["overlap"]["lanes"]')" = 0 ] || fail "serial: --build-jobs 0 makes nothing ahead"
[ "$(points serial 'all(x["times"]["build_s"] == x["times"]["waited_s"] for x in r.values())')" = True ] ||
  fail "serial: one build at a time, each waited for whole"
[ "$(points ahead 't["overlap"]["lanes"] >= 1')" = True ] || fail "ahead: the default makes builds ahead"
if [ "$lanes" -eq 3 ]; then
  [ "$(points lanes 't["overlap"]["lanes"]')" = 3 ] || fail "lanes: --build-jobs 3 gives three lanes"
  [ "$(points lanes 'any(x["times"].get("lane", 0) >= 1 for x in r.values())')" = True ] ||
    fail "lanes: no point was built in a lane of its own"
else
  echo "unshare cannot make a user and mount namespace here: one lane only"
fi
# NLopt names each point from those measured: while one is measured, the points it is likely to
# ask for next are built (tune::likely_next). Its first two points are the middle of the grid
# (CHUNK 4, the parent's build) and the initial step along CHUNK (64), whatever was measured: 64
# was being built before NLopt asked for it.
rc=0
"$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --runs 8 --no-cache --tune-search nlopt \
  --tune-budget 3 --json > "$WORK/nlopt.json" 2> "$WORK/nlopt.log" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "nlopt: exit $rc"$'\n'"$(tail -30 "$WORK/nlopt.log")"
[ "$(points nlopt '[x["point"] for x in t["points"]][:2]')" = "['CHUNK=4 dlcm=none', 'CHUNK=64 dlcm=none']" ] ||
  fail "nlopt: the first two points are not CHUNK 4 and 64: $(points nlopt '[x["point"] for x in t["points"]]')"
[ "$(points nlopt 't["build_lanes"] >= 1 and r["CHUNK=64 dlcm=none"]["times"]["waited_s"] < r["CHUNK=64 dlcm=none"]["times"]["build_s"]')" = True ] ||
  fail "nlopt: CHUNK 64 was not built ahead: $(points nlopt 'r["CHUNK=64 dlcm=none"]["times"]')"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/nlopt.json")
left=$(cd "$RUNS/$id" && ls -d ahead lanes work/ahead-* 2>/dev/null || true)
[ -z "$left" ] || fail "nlopt: the builds made ahead left $left"
echo "tune_pipeline: $(points ahead 't["overlap"]')"
