# The heavy pass in rounds with a stand-in ncu (fake-ncu; its replays take $FAKE_NCU_REPLAY_S
# per launch and $FAKE_NCU_SLOW more for one invocation): a profile cut by its budget or by
# --timeout keeps the rounds it finished, says what it holds and what was cut, and analysis uses
# the launches it holds; only a first round that cannot finish fails the profile. The budget
# cases run on the profile's test clock ($OPTIMAS_PROFILE_CLOCK), which only the fake's replays
# advance: what fits in a budget does not depend on the machine's load. A slow invocation still
# sleeps, for the wall-clock limit derived from the budget to end it.
source "$(dirname "$0")/lib.sh"

NCU="$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu"
export FAKE_NCU_DATA="$WORK/pages" FAKE_NCU_LOG="$WORK/ncu.log" OPTIMAS_TRACER=none
fake_ncu_pages
# The timing pass: one saxpy, then six launches of dloop, the one hot kernel. With --launch-cap 3
# its picks are invocations 1, 3 and 6; round 1 takes the middle one, 3.
{
  echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"'
  echo '"","","","","","","","","","","","nsecond"'
  echo '"0","479","k","127.0.0.1","saxpy(int, float, const float *, float *)","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","62,368"'
  for i in 1 2 3 4 5 6; do
    echo "\"$i\",\"479\",\"k\",\"127.0.0.1\",\"dloop(int, double *)\",\"1\",\"7\",\"(256, 1, 1)\",\"(65536, 1, 1)\",\"0\",\"9.0\",\"353,024\""
  done
} > "$FAKE_NCU_DATA/timing/raw.csv"
mkdir -p "$WORK/app"
cat > "$WORK/app/app.in" <<'APP'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do case $1 in --n) n=$2; shift 2;; --out) out=$2; shift 2;; *) shift;; esac; done
echo "n=$n" > "$out"; echo "kernel_time_ms: 0.4"
APP
cat > "$WORK/app/optimas.yml" <<'YML'
name: tiny
sources: [app.in]
build: {command: "cp app.in app && chmod +x app", binary: app}
run: {command: "./app --n {n} --out {output}", output: out.txt}
configs:
  - {name: default, n: 2, default: true}
YML
heavy_calls() { grep -c -- '--kernel-id' "$FAKE_NCU_LOG"; }

# Without a limit: round 1 profiles dloop's middle pick, round 2 the other two in one ncu process.
"$OPTIMAS" profile "$WORK/app" -o "$WORK/full" --ncu "$NCU" --json > "$WORK/full.json" 2> "$WORK/full.txt" ||
  fail "profile without a budget: $(cat "$WORK/full.txt")"
grep -q -- '--kernel-id ::regex:^(dloop)$:^(3)$ ' "$FAKE_NCU_LOG" || fail "round 1: $(cat "$FAKE_NCU_LOG")"
grep -q -- '--kernel-id ::regex:^(dloop)$:^(1|6)$ ' "$FAKE_NCU_LOG" || fail "round 2: $(cat "$FAKE_NCU_LOG")"
[ "$(heavy_calls)" -eq 2 ] || fail "two rounds expected: $(cat "$FAKE_NCU_LOG")"
M="$WORK/full/manifest.json"
json_check "$M" 'len(d["runs"][0]["rounds"]) == 2 and "cut" not in d["runs"][0]'
json_check "$M" 'd["runs"][0]["profiled"] == [{"function": "dloop", "launches": 3, "of": 3}]'
json_check "$M" '[sorted(r["pages"]) for r in d["runs"][0]["rounds"]] == [["details", "raw", "session", "source"]] * 2'
json_check "$WORK/full.json" '[l["id"] for l in d["launches"]] == [0, 1, 2] and {l["kernel"] for l in d["launches"]} == {"dloop"}' \
  "three launches of dloop, numbered across the rounds"
json_check "$WORK/full.json" '[s["result_id"] for s in d["sources"]] == [0, 1, 2]' "every round's source blocks match its own launches"

# The budget ends during round 2: the estimate from round 1 (2 s a launch on the test clock;
# 4 s left) lets it start with one launch, but profiling invocation 1 takes a minute of the wall
# clock, and the 4 s left of the budget end it. Round 1 is kept and the profile succeeds. (The
# passes before it have 6 s of the wall clock each: under load they take a second at most.)
: > "$FAKE_NCU_LOG"
echo 0 > "$WORK/clock"
rc=0
OPTIMAS_PROFILE_CLOCK="$WORK/clock" FAKE_NCU_REPLAY_S=2 FAKE_NCU_SLOW=1:60 \
  "$OPTIMAS" profile "$WORK/app" -o "$WORK/cut" --budget 6 --ncu "$NCU" > "$WORK/cut.out" 2> "$WORK/cut.txt" || rc=$?
[ "$rc" -eq 0 ] || fail "a profile cut in round 2 should succeed, exit $rc: $(cat "$WORK/cut.txt")"
[ "$(heavy_calls)" -eq 2 ] || fail "round 2 should have started: $(cat "$FAKE_NCU_LOG")"
grep -q '1 of 3 launches of dloop profiled; budget ended' "$WORK/cut.txt" || fail "progress: $(cat "$WORK/cut.txt")"
grep -q '1 of 3 launches of dloop profiled; budget ended' "$WORK/cut.out" || fail "summary: $(cat "$WORK/cut.out")"
M="$WORK/cut/manifest.json"
json_check "$M" 'd["runs"][0]["profiled"] == [{"function": "dloop", "launches": 1, "of": 3}]'
json_check "$M" 'd["runs"][0]["cut"]["why"] == "budget ended" and d["runs"][0]["cut"]["round"] == 2'
json_check "$M" '[r["round"] for r in d["runs"][0]["rounds"]] == [1] and d["runs"][0]["rounds"][0]["launches"] == [{"function": "dloop", "invocations": [3]}]'
[ ! -e "$WORK/cut/default/report.r2.ncu-rep" ] || fail "the killed round left a report"
# Analysis reads the kept round: dloop's roofline and stalls come from its one launch.
"$OPTIMAS" profile --import "$WORK/cut" --json > "$WORK/cut.json" 2> "$WORK/import.txt"
grep -q '1 of 3 launches of dloop profiled' "$WORK/import.txt" || fail "the import does not say the profile is partial"
json_check "$WORK/cut.json" 'len(d["launches"]) == 1 and len(d["sources"]) == 1 and len(d["timing"]) == 7'
"$OPTIMAS" analyze "$WORK/cut" --json > "$WORK/analyze.json" 2> "$WORK/analyze.txt" || fail "analyze: $(cat "$WORK/analyze.txt")"
json_check "$WORK/analyze.json" '[k["kernel"] for k in d["kernels"]] == ["dloop"] and d["kernels"][0]["roofline"]["launches"] == 1'
python3 - "$WORK/analyze.json" "$WORK/cut.json" <<'PY' || fail "analysis does not use the kept launch's samples"
import json, sys
a, p = (json.load(open(f)) for f in sys.argv[1:])
assert a["kernels"][0]["stalls"]["total_samples"] == sum(s["total_samples"] for s in p["sources"]) > 0
PY

# Time for one more launch only: round 2 takes one, and round 3 is not started. The planner's
# estimate of a round scales with the round it measured: 20 s launches on the test clock, and
# 57 s leave room for round 2 (37 s left, 25 s needed with the margin) and not for round 3.
: > "$FAKE_NCU_LOG"
echo 0 > "$WORK/clock"
OPTIMAS_PROFILE_CLOCK="$WORK/clock" FAKE_NCU_REPLAY_S=20 "$OPTIMAS" profile "$WORK/app" -o "$WORK/adapt" --budget 57 \
  --ncu "$NCU" > /dev/null 2> "$WORK/adapt.txt" || fail "adaptive cap: $(cat "$WORK/adapt.txt")"
[ "$(heavy_calls)" -eq 2 ] || fail "two rounds of one launch each expected: $(cat "$FAKE_NCU_LOG"; cat "$WORK/adapt.txt")"
grep -q -- '--kernel-id ::regex:^(dloop)$:^(1)$ ' "$FAKE_NCU_LOG" || fail "round 2 takes the next pick: $(cat "$FAKE_NCU_LOG")"
grep -q '2 of 3 launches of dloop profiled; budget ended (round 3 would take about' "$WORK/adapt.txt" || fail "progress: $(cat "$WORK/adapt.txt")"
json_check "$WORK/adapt/manifest.json" 'd["runs"][0]["profiled"][0]["launches"] == 2 and len(d["runs"][0]["rounds"]) == 2'

# --timeout cuts a round the same way, and says so. (A limit on each process, on the wall clock:
# the passes before the slow one take a second at most under load.)
: > "$FAKE_NCU_LOG"
FAKE_NCU_SLOW=1:60 "$OPTIMAS" profile "$WORK/app" -o "$WORK/timeout" --timeout 4 --ncu "$NCU" \
  > /dev/null 2> "$WORK/timeout.txt" || fail "a profile cut by --timeout in round 2 should succeed: $(cat "$WORK/timeout.txt")"
grep -q '1 of 3 launches of dloop profiled; timeout' "$WORK/timeout.txt" || fail "progress: $(cat "$WORK/timeout.txt")"
json_check "$WORK/timeout/manifest.json" 'd["runs"][0]["cut"]["why"] == "timeout"'

# A first round that cannot finish holds nothing: an error that says what to do. (The timing
# pass spends nothing of the budget on the test clock, and takes a second at most of its 3.)
echo 0 > "$WORK/clock"
expect_fail 1 'default: profiling failed \(timed out after .*\); the budget ended before one launch of each hot kernel was profiled .*: raise --budget' -- \
  env OPTIMAS_PROFILE_CLOCK="$WORK/clock" FAKE_NCU_SLOW=3:60 "$OPTIMAS" profile "$WORK/app" -o "$WORK/none" --budget 3 --ncu "$NCU"
pass "a profile cut by its budget keeps its finished rounds"
