# The validation probe (evaluate/probe.hpp), end to end without a GPU: the host stand-in for
# stream with the recorded H200 profile and the builtin backend. Before any variant is judged,
# the hot kernels are emptied in a copy and run once. Where the program's compared output shows
# their results, the run goes on; where it does not (here: results written to /dev/null, only
# "check: PASS" and the kernel time on stdout), the run stops before any variant, saying why, and
# a resume says the same without probing again. Rodinia's gaussian was such a program: it prints
# no result unless edited, and a 5x knob point was accepted on its banner lines alone.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
RUNS="$WORK/runs"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK"

# probe_run NAME: optimas run with the builtin on $WORK/NAME; sets rc, id, run_json, log.
probe_run() {
  rc=0
  "$OPTIMAS" run --app "$WORK/$1" --runs-dir "$RUNS" --import "$D" --no-tune "${@:2}" \
    > "$WORK/$1.out" 2> "$WORK/$1.log" || rc=$?
  log="$WORK/$1.log"
  id=$(ls -t "$RUNS" | grep -E '^[0-9a-f-]{36}$' | head -1)
  run_json="$RUNS/$id/run.json"
  [ -f "$run_json" ] || fail "$1: no run.json (exit $rc)"$'\n'"$(cat "$log")"
}

# Seen: the stand-in writes its results to {output}.
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/seen"
probe_run seen
json_check "$run_json" "d['baseline']['probe']['result'] == 'seen: the compared output changed'" \
  "seen: the probe should change the output"$'\n'"$(tail -20 "$log")"
json_check "$run_json" "any(k.startswith('triad_kernel (main.cu:') for k in d['baseline']['probe']['kernels'])" \
  "seen: the hot triad_kernel should be emptied"
json_check "$run_json" "len(d['variants']) >= 1" "seen: the run should go on to its variants"
grep -q "probe: validation sees the hot kernels' results" "$log" || fail "seen: no probe line"$'\n'"$(cat "$log")"
[ ! -e "$RUNS/$id/work/probe" ] || fail "seen: the probe's copy was left behind"

# With a round's candidates built ahead (the builtin's, two of them, on one lane), the probe's
# build is made ahead first, the candidates' after it while the probe runs; its verdict is the same.
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/ahead"
probe_run ahead --candidates 2 --build-jobs 1
json_check "$run_json" "d['baseline']['probe']['result'] == 'seen: the compared output changed'" \
  "ahead: the probe should change the output"$'\n'"$(tail -20 "$log")"
grep -q 'probe build: ok in [0-9.]* s, made ahead in lane 0' "$log" ||
  fail "ahead: the probe's build was not made ahead"$'\n'"$(cat "$log")"
left=$(cd "$RUNS/$id" && ls -d ahead lanes work/ahead-* work/probe 2>/dev/null || true)
[ -z "$left" ] || fail "ahead: the builds made ahead left $left"

# Blind: the results go to /dev/null.
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/blind"
sed -i -e 's|--out {output}|--out /dev/null|' "$WORK/blind/optimas.yml"
grep -q -- '--out /dev/null' "$WORK/blind/optimas.yml" || fail "the blind app's command was not edited"
probe_run blind
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] || fail "blind: exit $rc, expected an error"$'\n'"$(tail -20 "$log")"
grep -q 'validation cannot tell a wrong result from a right one: with .*triad_kernel (main.cu:[0-9]*).* emptied' "$log" ||
  fail "blind: the error should name the emptied kernels"$'\n'"$(tail -20 "$log")"
json_check "$run_json" "d['baseline']['probe']['result'] == 'blind' and d['status'] == 'failed' and not d['variants']" \
  "blind: run.json should record the blind probe and no variant"
grep -qx 'check: PASS' "$RUNS/$id/baseline/probe/output-1" || fail "blind: the probe's output is not kept"
# The resume must not build the probe again: its build log, removed here, must not come back.
rm "$RUNS/$id/baseline/probe/build.log"

# A resume says the same, from the record, without building the probe again.
rc=0
"$OPTIMAS" run --resume "$id" --runs-dir "$RUNS" > "$WORK/resume.out" 2> "$WORK/resume.log" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] || fail "resume: exit $rc, expected an error"$'\n'"$(tail -20 "$WORK/resume.log")"
grep -q 'validation cannot tell a wrong result' "$WORK/resume.log" || fail "resume: no probe error"$'\n'"$(tail -20 "$WORK/resume.log")"
[ ! -e "$RUNS/$id/baseline/probe/build.log" ] || fail "resume: the probe was built again"
# Blind with builds ahead: the same error; the candidates' builds end with the run.
cp -r "$WORK/blind" "$WORK/blind-ahead"
probe_run blind-ahead --candidates 2 --build-jobs 1
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] || fail "blind-ahead: exit $rc, expected an error"$'\n'"$(tail -20 "$log")"
grep -q 'validation cannot tell a wrong result from a right one' "$log" ||
  fail "blind-ahead: no probe error"$'\n'"$(tail -20 "$log")"
left=$(cd "$RUNS/$id" && ls -d ahead lanes work/ahead-* 2>/dev/null || true)
[ -z "$left" ] || fail "blind-ahead: the builds made ahead left $left"

pass "the probe lets a run whose output shows the kernels' results go on and stops a blind one"
