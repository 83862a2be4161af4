# The last candidate's re-profile (the EAR step) waits for the tuning stage's builds (loop/pipeline.hpp,
# docs/pipeline.md): once it is measured, the stage's parent is known, so the points are submitted
# first and build while it is re-profiled. The host stand-in, a stand-in ncu replaying the H200
# stream pages, one scripted reply (the honest edit), and the knob the tuning stage finds (dlcm).
# Checked: the re-profile comes after the stage's search is announced and before its first point;
# the variant's result holds its EAR with directional consistency and the re-profile's seconds;
# tune.overlap says how long the re-profile took. Then the same run killed (SIGKILL) while that
# re-profile runs: the variant's result says its re-profile is pending, and the resume takes it,
# with the same EAR, before the points are measured.
source "$(dirname "$0")/lib.sh"
: "${FAKE_LLM_SERVER:?ctest sets FAKE_LLM_SERVER}"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

fake_ncu_recorded "$OPTIMAS_TEST_DATA/h200/stream/default"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
python3 - "$WORK/honest.json" <<'PY'
import json, sys
edit = {"file": "main.cu", "kernel": "triad_kernel", "find": "for (int r = 0; r < 8; ++r) {",
        "replace": "for (int r = 0; r < 1; ++r) {", "line_start": None, "line_end": None, "new_text": None,
        "evidence": ["PC1", "RF1"], "rationale": "Each repetition recomputes the same value. One pass gives the same bits.",
        "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}
json.dump({"summary": "triad repeats its work", "edits": [edit], "withheld": []}, open(sys.argv[1], "w"))
PY
mkfifo "$WORK/ready"
"$FAKE_LLM_SERVER" "$WORK/honest.json" "$WORK/count" > "$WORK/ready" &
server=$!
trap 'curl -s -X POST "http://127.0.0.1:$port/shutdown" >/dev/null 2>&1; kill $server 2>/dev/null; rm -rf "$WORK"' EXIT
read -r word port < "$WORK/ready"
[ "$word" = ready ] || fail "server did not start"
cd "$WORK"

# ncu as the stand-in, except that its first call for the variant's re-profile kills optimas once where $WORK/kill-at says so.
cat > killer-ncu <<SH
#!/usr/bin/env bash
case "\$*" in
  *iterations/1/attempt-1/profile*) if [ -f "$WORK/kill-at" ] && mkdir "$WORK/kill-done" 2>/dev/null; then kill -KILL "\$(cat "$WORK/optimas.pid")"; exit 1; fi ;;
esac
exec "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" "\$@"
SH
chmod +x killer-ncu

# optimas_run RUNS LOG [ARGS]: the run in the background (its pid for killer-ncu); sets rc.
optimas_run() {
  local runs=$1 log=$2
  shift 2
  "$OPTIMAS" run --runs-dir "$runs" "$@" > "$log.json" 2> "$log.txt" &
  echo $! > optimas.pid
  rc=0
  wait "$(cat optimas.pid)" || rc=$?
}
common=(--app app --ncu "$WORK/killer-ncu" --no-cache -m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" --iterations 1
  --retries 0 --runs 10 --scope file --json)

# Whole: the re-profile between the stage's announcement and its first point.
optimas_run runs whole "${common[@]}"
# Exit 0 or 3 (improved or not: the verdict is the measurement's, the order is what is checked).
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "whole: exit $rc: $(tail -20 whole.txt)"
order=$(grep -nE "tune: exhaustive search|i1a1 re-profile: done|tune: \[1/" whole.txt | cut -d: -f1 | tr '\n' ' ')
[ "$(echo "$order" | wc -w)" -eq 3 ] && [ "$(echo "$order" | tr ' ' '\n' | grep . | sort -n | tr '\n' ' ')" = "$order" ] ||
  fail "whole: the re-profile is not between the stage's announcement and its first point"$'\n'"$(cat whole.txt)"
check_ear() { # RUN_JSON NAME
  json_check "$1" '(lambda v: v["key"] == "i1a1" and "ear_pending" not in v and v["ear"]["directional_consistency"] is not None and v["times"]["ear_s"] > 0)(d["variants"][0])' \
    "$2: the variant's EAR is not complete: $(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["variants"][0]; print(v.get("ear"), v.get("times"))' "$1")"
  json_check "$1" 'd["tune"]["overlap"]["ear_s"] > 0 and len(d["tune"]["points"]) >= 1' "$2: tune.overlap has no ear_s"
}
check_ear whole.json whole
[ -f "$(ls -d runs/*/)/iterations/1/attempt-1/profile/.complete" ] || fail "whole: the variant was not re-profiled"

# Killed during that re-profile, then resumed.
touch kill-at
optimas_run killed killed "${common[@]}"
[ -d killed ] && [ -d "$WORK/kill-done" ] || fail "killed: optimas was not killed at the re-profile (exit $rc)"
R=$(ls -d killed/*/)
json_check "$R/iterations/1/attempt-1/result.json" 'd["ear_pending"] is True and d["status"] in ("accepted", "rejected")' \
  "killed: the measured variant does not say its re-profile is pending"
rm kill-at
optimas_run killed resumed --resume "$(basename "$R")" --json
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "resumed: exit $rc: $(tail -20 resumed.txt)"
check_ear resumed.json resumed
grep -q "i1a1 re-profile: done" resumed.txt || fail "resumed: the pending re-profile was not taken"$'\n'"$(cat resumed.txt)"
[ "$(cat count)" -eq 2 ] || fail "the model was asked $(cat count) times, not once a run (the resume asks again)"
json_check resumed.json 'd["variants"][0]["ear"]["effects"] == '"$(python3 -c 'import json; print(json.load(open("whole.json"))["variants"][0]["ear"]["effects"])')" \
  "resumed: the EAR effects differ from the whole run's"
pass "the last candidate's re-profile runs while the tuning stage's points build, and a resume takes it when it was cut off"
