# Rounds and candidates with measured feedback (optimize.rounds, optimize.candidates) on the host
# stand-in, with a scripted model: a local OpenAI-compatible server whose reply depends on what
# the prompt says. Round 1: candidate 1 repeats the triad ten times as often (same bits, slower:
# rejected); candidate 2 is told what candidate 1 is and answers the same edit (a duplicate,
# neither built nor measured). Round 2 starts from the baseline, and its prompts carry "What
# earlier attempts measured" with candidate 1's measured speedup; the model answers that with
# the honest edit, which is accepted; its second candidate repeats it (a duplicate). run.json's
# search tree holds all four with their parents, rounds and verdicts. A budget of one verdict
# stops the search after the first; that run's prompt shows the accepted edit as a worked example
# (memory across runs), as does a run in another store given the exported corpus.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app"
RUNS="$WORK/runs"
source "$(dirname "$0")/loop_lib.sh"
# No tuning stage (tune*.sh test it): here it finds only dlcm, whose points g++ builds stale.
LOOP_OPTIONS=--no-tune

reply slow triad_kernel PC1,RF1 "$TRIAD_LOOP" 'for (int r = 0; r < 80; ++r) {'
honest_reply honest
R="$WORK/replies"
script="when:You are candidate 2 of this round. i2a1=$R/honest.json"
script+=",when:You are candidate 2 of this round. i1a1=$R/slow.json"
# (A text holds no comma: the server's list of replies is split on them.)
script+=",when:from baseline): rejected=$R/honest.json"
script+=",$R/slow.json"

new_app app
loop search "$WORK/app" "$script" --rounds 2 --candidates 2 --retries 0 --runs 10 --scope file
[ "$rc" -eq 0 ] || fail "the run exits $rc, not 0: $(tail -20 "$log")"
[ "$(cat "$count")" -eq 4 ] || fail "the model was asked $(cat "$count") times, not 4 (2 rounds x 2 candidates)"

json_check "$run_json" '[(n["key"], n["parent"], n["round"], n["candidate"], n["status"]) for n in d["search"]["nodes"]] == [("i1a1", "baseline", 1, 1, "rejected"), ("i1c2a1", "baseline", 1, 2, "duplicate"), ("i2a1", "baseline", 2, 1, "accepted"), ("i2c2a1", "baseline", 2, 2, "duplicate")] and d["search"]["best"] == "i2a1" and d["best"] == "i2a1"' \
  "the search tree is wrong: $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["search"], indent=1))' "$run_json")"
json_check "$run_json" 'd["search"]["nodes"][0]["verdict"] == "slower" and d["search"]["nodes"][0]["speedup"] < 0.9 and d["search"]["nodes"][2]["verdict"] == "faster" and d["search"]["nodes"][2]["speedup"] > 1.1 and all(d["search"]["nodes"][k]["seconds"] > 0 for k in (0, 2)) and all("verdict" not in d["search"]["nodes"][k] for k in (1, 3))' \
  "the measured nodes lack their verdicts or times: $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["search"]["nodes"]))' "$run_json")"
json_check "$run_json" '"the same code as i1a1" in d["variants"][1]["reason"] and "the same code as i2a1" in d["variants"][3]["reason"]' \
  "the duplicates do not name their twins"

# What reached the model: round 1's second candidate was told of the first; round 2's first
# carries candidate 1's measured speedup, as run.json has it.
grep -q "You are candidate 2 of this round. i1a1 answered before you" "$count.request-2.txt" ||
  fail "round 1's second candidate was not told of the first: $(tail -20 "$count.request-2.txt")"
! grep -q "What earlier attempts measured" "$count.request-1.txt" || fail "the first request has a history"
slow=$(python3 -c 'import json,sys; print("%.3fx" % json.load(open(sys.argv[1]))["variants"][0]["measurement"]["speedup"])' "$run_json")
for section in "## What earlier attempts measured" "### i1a1 (round 1, candidate 1, from baseline): rejected" \
  "- Measured: $slow" "triad_kernel citing PC1, RF1" "main.cu +1 -1" "### i1c2a1 (round 1, candidate 2, from baseline): duplicate"; do
  grep -qF -- "$section" "$count.request-3.txt" || fail "round 2's prompt lacks \"$section\": $(sed -n '/What earlier attempts/,$p' "$count.request-3.txt")"
done


# runs show draws the tree: every node under its parent, measured ones with their verdicts.
"$OPTIMAS" runs show "$id" --runs-dir "$RUNS" > "$WORK/show.txt" || fail "runs show failed"
grep -q "^  search: 2 round(s) x 2 candidate(s), best i2a1$" "$WORK/show.txt" || fail "runs show has no search line: $(cat "$WORK/show.txt")"
grep -qE "^      i1a1 \(round 1, candidate 1\): rejected slower 0\.[0-9]+x; [0-9.]+ s$" "$WORK/show.txt" &&
  grep -qE "^      i2a1 \(round 2, candidate 1\): accepted faster [0-9.]+x; [0-9.]+ s$" "$WORK/show.txt" &&
  grep -qE "^      i2c2a1 \(round 2, candidate 2\): duplicate; [0-9.]+ s$" "$WORK/show.txt" ||
  fail "runs show does not draw the tree: $(sed -n '/search:/,$p' "$WORK/show.txt")"

! grep -q "Worked examples from earlier runs" "$count.request-1.txt" || fail "an empty store gave worked examples"
first=$id

# A budget of one verdict: after round 1's first candidate is measured, nothing more is asked;
# what was measured stays, and run.json says which budget ended the search. The store now holds
# the accepted i2a1, whose kernel's evidence is this run's (the same profile): it is recalled as
# a worked example (optimize.memory, on by default), with the reason.
new_app budget
loop budget "$WORK/budget" "$R/slow.json" --rounds 3 --candidates 2 --retries 0 --runs 3 --budget-verdicts 1
[ "$rc" -eq 3 ] || fail "the budgeted run exits $rc, not 3: $(tail -20 "$log")"
[ "$(cat "$count")" -eq 1 ] || fail "the model was asked $(cat "$count") times under a budget of one verdict"
json_check "$run_json" '[n["key"] for n in d["search"]["nodes"]] == ["i1a1"] and d["search"]["stopped"] == "the budget of 1 verdict(s) is spent" and d["search"]["budget"]["verdicts"] == {"limit": 1, "spent": 1}' \
  "the budget did not end the search: $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["search"]))' "$run_json")"
grep -q "no further candidate: the budget of 1 verdict(s) is spent" "$log" || fail "the run does not say why it stopped: $(tail "$log")"
for text in "## Worked examples from earlier runs" "### triad_kernel in stream (run ${first:0:8}, variant i2a1): " \
  "Shown because: memory-bound" "- triad_kernel citing PC1, RF1: "; do
  grep -qF -- "$text" "$count.request-1.txt" || fail "the budgeted run's prompt lacks \"$text\": $(sed -n '/Worked examples/,$p' "$count.request-1.txt" | head -20)"
done
json_check "$run_json" 'd["memory"]["1"][0]["run"] == "'"$first"'" and d["memory"]["1"][0]["variant"] == "i2a1" and d["memory"]["1"][0]["kernel"] == "triad_kernel"' \
  "run.json does not record the recalled example: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("memory"))' "$run_json")"

# Memory from an exported corpus: another store (another machine) knows nothing of i2a1, but the
# corpus exported here carries its memory, and --memory-file shows it as the same worked example.
"$OPTIMAS" corpus export --runs-dir "$RUNS" --out "$WORK/corpus.jsonl" 2> "$WORK/export.log" || fail "corpus export failed: $(cat "$WORK/export.log")"
RUNS="$WORK/elsewhere-runs"
new_app elsewhere
loop elsewhere "$WORK/elsewhere" "$R/slow.json" --retries 0 --runs 3 --budget-verdicts 1 --memory-file "$WORK/corpus.jsonl"
[ "$rc" -eq 3 ] || fail "the run with the exported corpus exits $rc, not 3: $(tail -20 "$log")"
for text in "## Worked examples from earlier runs" "### triad_kernel in stream (run ${first:0:8}, variant i2a1): " \
  "Shown because: memory-bound" "- triad_kernel citing PC1, RF1: "; do
  grep -qF -- "$text" "$count.request-1.txt" || fail "the prompt from the exported corpus lacks \"$text\": $(sed -n '/Worked examples/,$p' "$count.request-1.txt" | head -20)"
done
# A corpus that is not one is named with its line before anything runs.
printf '{"memory": [{"kernel": "k"}]}\n' > "$WORK/broken.jsonl"
rc=0
"$OPTIMAS" run --app "$WORK/elsewhere" --runs-dir "$RUNS" --import "$D" --memory-file "$WORK/broken.jsonl" > /dev/null 2> "$WORK/broken.log" || rc=$?
[ "$rc" -ne 0 ] && grep -q "broken.jsonl:1: a memory has no" "$WORK/broken.log" || fail "a broken corpus was not named (exit $rc): $(cat "$WORK/broken.log")"

# A later round that proposes again what an earlier round measured (the builtin does, on a best
# that did not change: digits on the H200, session 21) is a duplicate too, not measured twice.
new_app again
loop again "$WORK/again" "$R/slow.json" --rounds 2 --retries 0 --runs 3 --memory off
expect again i2a1 duplicate 'same code as i1a1, an earlier variant of this run'
json_check "$run_json" "[v['status'] for v in d['variants']] == ['rejected', 'duplicate']" "again: only i1a1 is measured"

pass "two rounds of two candidates: the second candidate told of the first, round 2 told what round 1 measured, duplicates not measured, the honest edit accepted; a budget stops the search; the next run recalls the accepted edit, from the store and from an exported corpus; a later round's repeat is a duplicate"
