# Rounds and candidates with the manual backend on the host stand-in (issue #28): 2 rounds x 2
# candidates, end to end. The run stops at each question (exit 4) with the prompt in a file; this
# test answers as a user pasting a model's reply would, choosing by what the prompt says (round
# 1: a slower edit, then for the second candidate a faster one; round 2 two edits slower than
# that), and resumes with the hint the run printed, until the run ends. Checked: four questions,
# four variants in the search tree with their rounds and candidates, and the prompts of round 2 and of
# the second candidates carry what they must. Round 2 is resumed without the scratch builds (as
# after an interruption) and measures against round 1's accepted variant, built again.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

# Profiled by the stand-in ncu (fake-ncu replays the stream pages recorded on the H200), so that
# round 1's accepted variant is re-profiled and round 2 starts from it.
D="$OPTIMAS_TEST_DATA/h200/stream/default"
fake_ncu_recorded "$D"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
cd "$WORK"

# answer PROMPT: the reply file beside it, by what the prompt says.
answer() {
  # Round 1: the triad repeated ten times as often (slower), then once (8 times less work:
  # accepted). Round 2, from that: twice, then three times (both slower than their parent).
  local reps=80
  if grep -q "### i1c2a1 (round 1, candidate 2" "$1"; then
    reps=2
    ! grep -q "You are candidate 2 of this round" "$1" || reps=3
  elif grep -q "You are candidate 2 of this round" "$1"; then
    reps=1
  fi
  # The loop as the prompt shows it: round 2's parent is round 1's accepted variant.
  local loop
  loop=$(grep -o 'for (int r = 0; r < [0-9]*; ++r) {' "$1" | head -1)
  cat > "${1/prompt-/reply-}" <<JSON
{"summary": "triad repeats its work", "edits": [{"file": "main.cu", "kernel": "triad_kernel",
 "find": "$loop", "replace": "for (int r = 0; r < $reps; ++r) {",
 "line_start": null, "line_end": null, "new_text": null, "evidence": ["PC1"],
 "rationale": "The repetitions recompute the same value.", "expected_effect": []}], "withheld": []}
JSON
}

rc=0
"$OPTIMAS" run --app app --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" --no-tune -m manual --runs-dir runs --rounds 2 --candidates 2 --retries 0 \
  --runs 5 --warmup 0 > run.out 2> run.log || rc=$?
asked=0
while [ "$rc" -eq 4 ] && [ "$asked" -lt 8 ]; do
  hint=$(grep -o 'continue with `[^`]*`' run.log | tail -1 | sed 's/^continue with `//; s/`$//')
  [ -n "$hint" ] || fail "the waiting run does not say how to continue: $(tail run.log)"
  # The search tree on disk has every variant recorded so far, not only those of finished rounds
  # (a run stopped mid-round, or in the tuning stage after the last round, showed a stale tree).
  waiting=runs/$(ls runs | grep -E '^[0-9a-f-]{36}$')/run.json
  json_check "$waiting" '[n["key"] for n in d.get("search", {}).get("nodes", [])] == [v["key"] for v in d["variants"]]' \
    "the waiting run's search tree lags its variants: $(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(d.get("search"), [v["key"] for v in d["variants"]])' "$waiting")"
  for p in optimas-manual/prompt-*.md; do
    [ -f "${p/prompt-/reply-}" ] || { answer "$p"; asked=$((asked + 1)); }
  done
  # Round 2 resumes without the scratch builds, as after an interruption (they go first, to give
  # a full disk its space back) or in a run folder carried to another machine: its candidates are
  # measured against round 1's best, which must be built again first.
  if [ "$asked" -eq 3 ] && [ -z "${gone:-}" ]; then
    gone=$(ls -d runs/*/work/i1* 2>/dev/null)
    [ -n "$gone" ] || fail "round 1 left no scratch build of its variants"
    rm -rf runs/*/work
  fi
  rc=0
  eval "\"\$OPTIMAS\" ${hint#optimas }" > run.out 2> run.log || rc=$?
done
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "the run ends with exit $rc: $(tail -20 run.log)"
[ "$asked" -eq 4 ] || fail "$asked questions were answered, not 4"
[ -n "${gone:-}" ] || fail "round 2 was never resumed without its scratch builds"

id=$(ls runs | grep -E '^[0-9a-f-]{36}$')
run_json="runs/$id/run.json"
json_check "$run_json" '[(n["key"], n["round"], n["candidate"]) for n in d["search"]["nodes"]] == [("i1a1", 1, 1), ("i1c2a1", 1, 2), ("i2a1", 2, 1), ("i2c2a1", 2, 2)] and d["status"] == "finished"' \
  "the search tree is wrong: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("search"))' "$run_json")"
json_check "$run_json" 'all(v["status"] in ("accepted", "rejected") and "measurement" in v for v in d["variants"])' \
  "a variant was not measured: $(python3 -c 'import json,sys; print([(v["key"], v["status"], v.get("reason")) for v in json.load(open(sys.argv[1]))["variants"]])' "$run_json")"
for key in i1c2a1 i2c2a1; do
  dir=$(python3 -c 'import json,sys; print([v["dir"] for v in json.load(open(sys.argv[1]))["variants"] if v["key"] == sys.argv[2]][0])' "$run_json" "$key")
  grep -q "You are candidate 2 of this round" "runs/$id/$dir/prompt.md" || fail "$key was not told of the first candidate"
done
grep -q "### i1a1 (round 1, candidate 1, from baseline)" "runs/$id/iterations/2/attempt-1/prompt.md" ||
  fail "round 2 was not told what round 1 measured: $(sed -n '/What earlier/,$p' "runs/$id/iterations/2/attempt-1/prompt.md")"

pass "the manual backend runs 2 rounds x 2 candidates end to end, the prompts telling later candidates and rounds what came before"
