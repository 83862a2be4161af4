# optimas run killed in the middle of its measurements (SIGKILL, no chance to clean up) and
# resumed with --resume: the run finishes with the accepted variant, keeps every sample taken
# before the kill, asks the backend once and builds the baseline and the variant once each.
# The stand-in is tests/scenario/loop-app; a wrapper around its run command stops the run at a
# chosen program run and tells the test through a FIFO, so nothing here waits on a timer.
source "$(dirname "$0")/lib.sh"
: "${FAKE_LLM_SERVER:?ctest sets FAKE_LLM_SERVER}"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
RUNS="$WORK/runs"

server="" optimas="" pgid="" first=""
cleanup() {
  # The stopped program dies with optimas (its supervisor ends it); its group id is not ours to
  # signal once it may be gone.
  [ -z "$optimas" ] || kill -KILL "$optimas" 2>/dev/null || true
  # The subshell that reports how optimas ended would wait for a reader of its FIFO forever,
  # holding ctest's output open.
  [ -z "$first" ] || kill -KILL "$first" 2>/dev/null || true
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# Program runs before the measurement: 3 baseline runs (one per config), the validation probe's
# run, 6 validation checks (3 configs, 3 fresh seeds) of a variant and the baseline each, then
# one warm-up run of each. The measured rounds follow; the run is stopped as the fifth timed
# sample starts.
STOP_AT=$((3 + 1 + 6 * 2 + 2 + 4 + 1))

# The build and the run count themselves in files of $WORK, which the sandbox's walls (a private
# /tmp) would hide: the run is at the watch level (--sandbox watch), and its resume keeps it.
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
sed -i -e "s|command: g++|command: echo built >> $WORK/builds.log \&\& g++|" \
  -e "s|command: ./stream|command: $WORK/wrapper.sh ./stream|" "$WORK/app/optimas.yml"
grep -q "wrapper.sh ./stream" "$WORK/app/optimas.yml" || fail "the run command was not wrapped"
grep -q "builds.log && g++" "$WORK/app/optimas.yml" || fail "the build command was not wrapped"
mkfifo "$WORK/stopped" "$WORK/never"
cat > "$WORK/wrapper.sh" <<EOF
#!/bin/bash
# Counts program runs; run $STOP_AT reports its process group and blocks until it is killed.
n=\$((\$(cat "$WORK/invocations" 2>/dev/null || echo 0) + 1))
echo "\$n" > "$WORK/invocations"
if [ "\$n" -eq $STOP_AT ]; then
  echo "stopped \$(ps -o pgid= \$\$ | tr -d ' ')" > "$WORK/stopped"
  read -r _ < "$WORK/never"
fi
exec "\$@"
EOF
chmod +x "$WORK/wrapper.sh"

# Honest edits (see loop_cheats_results.sh): triad without its repetition, dot partial sums in one pass.
python3 - "$WORK/honest.json" <<'PY'
import json, sys
def edit(kernel, evidence, find, replace):
    return {"file": "main.cu", "kernel": kernel, "find": find, "replace": replace, "line_start": None,
            "line_end": None, "new_text": None, "evidence": evidence, "rationale": "Less work, same result.",
            "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}
edits = [edit("triad_kernel", ["PC1", "RF1"], "for (int r = 0; r < 8; ++r) {", "for (int r = 0; r < 1; ++r) {"),
         edit("dot_partial_kernel", ["RF1"],
              "  for (int p = 0; p < 16; ++p) {\n    double s = 0;\n    for (long i = p; i < n; i += 16) s += a[i] * b[i];\n"
              "    partial[p] = s;\n  }",
              "  double s[16] = {};\n  for (long i = 0; i < n; ++i) s[i % 16] += a[i] * b[i];\n"
              "  for (int p = 0; p < 16; ++p) partial[p] = s[p];")]
json.dump({"summary": "less work in triad and dot", "edits": edits, "withheld": []}, open(sys.argv[1], "w"))
PY

mkfifo "$WORK/ready"
"$FAKE_LLM_SERVER" "$WORK/honest.json" "$WORK/count" > "$WORK/ready" &
server=$!
read -r word port < "$WORK/ready"
[ "$word" = ready ] || fail "the fake server did not start"

# The first run, in the background; whatever ends it, a line reaches the FIFO. Its two lines (the
# stop, then how optimas ended) come from two writers, read through one descriptor held open for
# reading and writing: opened anew for the second line, the FIFO could still have the first
# writer attached, and its close read as an empty line (loop_kill.sh met that).
exec 3<> "$WORK/stopped"
(
  exec 3>&-
  "$OPTIMAS" run --app "$WORK/app" --runs-dir "$RUNS" --cache-dir "$WORK/cache" --no-cache \
    -m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" --import "$D" \
    --scope file --retries 0 --fresh-seeds 1 --runs 5 --warmup 1 --no-tune --sandbox watch \
    > "$WORK/first.out" 2> "$WORK/first.log" &
  echo $! > "$WORK/optimas.pid"
  rc=0
  wait $! || rc=$?
  echo "exited $rc" > "$WORK/stopped"
) 2> /dev/null & # without bash's own "Killed" notice
first=$!
read -r word value <&3
[ "$word" = stopped ] || fail "the run ended ($value) before program run $STOP_AT:"$'\n'"$(cat "$WORK/first.log")"
[[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -gt 1 ] || fail "the wrapper reported no process group: $value"
pgid=$value
optimas=$(cat "$WORK/optimas.pid")
kill -KILL "$optimas"
read -r word rc <&3
exec 3>&-
[ "$word $rc" = "exited 137" ] || fail "optimas was not killed: $word $rc"
optimas="" first=""
# The stopped program is not the test's to kill: its supervisor ends it when optimas dies, and
# the resumed run makes sure of it (checked below).

id=$(ls "$RUNS" | grep -E '^[0-9a-f-]{36}$')
[ "$(echo "$id" | wc -l)" -eq 1 ] || fail "expected one run folder, got: $id"
journal="$RUNS/$id/iterations/1/attempt-1/measurements.jsonl"
[ -f "$journal" ] || fail "no measurement journal after the kill"
cp "$journal" "$WORK/journal.before"
before=$(wc -l < "$WORK/journal.before")
[ "$before" -eq 4 ] || fail "expected 4 samples before the kill, got $before"
"$OPTIMAS" runs list --runs-dir "$RUNS" --json > "$WORK/list.json" || fail "runs list"
json_check "$WORK/list.json" "[(r['id'], r['status']) for r in d] == [('$id', 'interrupted')]" \
  "runs list shows the killed run as interrupted: $(cat "$WORK/list.json")"

# The resumed run finishes what was left.
rc=0
"$OPTIMAS" run --resume "${id:0:8}" --runs-dir "$RUNS" > "$WORK/resume.out" 2> "$WORK/resume.log" || rc=$?
[ "$rc" -eq 0 ] || fail "the resumed run: exit $rc"$'\n'"$(cat "$WORK/resume.log")"
run_json="$RUNS/$id/run.json"
json_check "$run_json" 'd["status"] == "finished" and d["outcome"] == "improved" and d["best"] == "i1a1"' \
  "the resumed run finished with an improvement: $(cat "$WORK/resume.out")"
json_check "$run_json" '[(v["key"], v["status"]) for v in d["variants"]] == [("i1a1", "accepted")]' \
  "one variant, accepted: $(cat "$WORK/resume.out")"
json_check "$run_json" 'len(d["variants"][0]["measurement"]["configs"]["default"]["base"]) == 5 and len(d["variants"][0]["measurement"]["configs"]["default"]["variant"]) == 5' \
  "five samples of each in the screening"
json_check "$run_json" 'len(d["variants"][0]["measurement"]["confirmation"]["fresh"]["base"]) == 5 and d["variants"][0]["measurement"]["confirmation"]["all"]["runs"] == 10' \
  "five fresh samples of each in the confirmation, ten in the verdict"

after=$(wc -l < "$journal")
[ "$after" -ge "$before" ] || fail "the journal lost samples: $before before, $after after"
# 5 rounds of 2, then 5 more confirming the verdict on fresh runs.
[ "$after" -eq 20 ] || fail "the journal holds $after samples, expected 20 (5 rounds of 2, 5 confirming)"
[ "$(head -n "$before" "$journal")" = "$(cat "$WORK/journal.before")" ] ||
  fail "the samples taken before the kill changed:"$'\n'"$(cat "$WORK/journal.before")"$'\n'"---"$'\n'"$(cat "$journal")"

[ "$(cat "$WORK/count")" = 1 ] || fail "the backend was asked $(cat "$WORK/count") times, expected once"
[ "$(wc -l < "$WORK/builds.log")" -eq 3 ] ||
  fail "expected 3 builds (baseline, probe, variant), got $(wc -l < "$WORK/builds.log"):"$'\n'"$(cat "$WORK/resume.log")"
# What remained: the rest of the measurement (a warm-up of each and 6 samples) and the 10 runs
# of the confirmation, nothing else.
runs_after=$(($(cat "$WORK/invocations") - STOP_AT))
[ "$runs_after" -eq 18 ] || fail "the resumed run ran the programs $runs_after times, expected 18"$'\n'"$(cat "$WORK/resume.log")"
! kill -0 -- "-$pgid" 2> /dev/null || fail "the stopped program (group $pgid) outlived the killed run and the resume"
pgid=""
# A finished run has nothing left to resume.
expect_fail 2 "has finished" -- "$OPTIMAS" run --resume "$id" --runs-dir "$RUNS"

# The manual backend: the run waits (exit 4) for the answer file, and --resume continues it.
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/manual-app"
cd "$WORK"
rc=0
# A relative --runs-dir: the hint must still be one command that works when pasted, from anywhere.
"$OPTIMAS" run --app manual-app --import "$D" -m manual --runs-dir manual-runs --runs 2 --warmup 0 \
  > manual.out 2> manual.log || rc=$?
[ "$rc" -eq 4 ] || fail "manual: expected exit 4 (waiting), got $rc: $(cat manual.log)"
hint=$(grep -o 'continue with `[^`]*`' manual.log | sed 's/^continue with `//; s/`$//') ||
  fail "manual: the message does not say how to continue: $(cat manual.log)"
[[ "$hint" == "optimas run --resume "*" --runs-dir $WORK/manual-runs" ]] ||
  fail "manual: the hint is not one command with an absolute --runs-dir: $hint"
mid=$(ls "$WORK/manual-runs" | grep -v index)
json_check "$WORK/manual-runs/$mid/run.json" 'd["status"] == "waiting"'
prompt=$(ls optimas-manual/prompt-*.md)
cat > "${prompt/prompt-/reply-}" <<'JSON'
{"summary": "triad repeats its work", "edits": [{"file": "main.cu", "kernel": "triad_kernel",
 "find": "for (int r = 0; r < 8; ++r) {", "replace": "for (int r = 0; r < 1; ++r) {",
 "line_start": null, "line_end": null, "new_text": null, "evidence": ["PC1"],
 "rationale": "Each repetition recomputes the same value.", "expected_effect": []}], "withheld": []}
JSON
rc=0
mkdir -p "$WORK/elsewhere"
# The hint as pasted, from another folder (with our binary for the word optimas).
(cd "$WORK/elsewhere" && eval "\"\$OPTIMAS\" ${hint#optimas }") > manual2.out 2> manual2.log || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "manual resume: exit $rc: $(cat manual2.log)"
json_check "$WORK/manual-runs/$mid/run.json" \
  'd["status"] == "finished" and d["variants"][0]["validation"]["passed"] and d["variants"][0]["applied"] == 1'
grep -q "baseline:" manual2.log && fail "manual resume rebuilt or reran the baseline: $(cat manual2.log)"
pass "a run killed while measuring resumes: nothing lost, nothing redone; a manual run resumes with its reply"
