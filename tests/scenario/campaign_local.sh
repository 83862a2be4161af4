# optimas campaign with the local launcher, without a GPU: 8 cells (two host stand-ins of the
# stream example x the subsets pc+roofline and code-only x the builtin and manual backends), each
# a whole `optimas run` from the recorded H200 profile. Checked:
#   - --dry-run lists the 8 cells and their commands and runs nothing (also for examples/campaign.yml);
#   - the campaign runs every builtin cell to its end; the one cell whose build fails the first
#     time is requeued and done on its second attempt, its failed run left in the store; the
#     manual cells wait for their replies (exit 4);
#   - once the replies are saved, --resume continues the manual cells' own runs and nothing else;
#   - every cell's run.json carries campaign {id, cell, seed} and its subset ("code-only" for
#     the baseline, whose prompt has no diagnostics and whose builtin edits are withheld);
#   - table.json and `campaign table --format json` are complete (8 cells done, 4 rows of 2
#     runs), CSV and Markdown print the same rows; `runs list --campaign` lists the 9 runs;
#   - --resume then runs nothing; a second start without --resume is refused.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"
source "$(dirname "$0")/campaign_lib.sh"

RUNS="$WORK/runs"
campaign_apps "$WORK"
campaign_file "$WORK/campaign.yml" "$RUNS" local "{jobs: 2}"
C="$RUNS/campaigns/$CAMPAIGN_ID"

# --- the dry run ---------------------------------------------------------------------------
"$OPTIMAS" campaign "$WORK/campaign.yml" --dry-run --json > "$WORK/plan.json" || fail "the dry run failed"
json_check "$WORK/plan.json" 'len(d["cells"]) == 8' "the dry run should list 8 cells"
json_check "$WORK/plan.json" 'd["cells"][0]["id"] == "stream-pc_roofline-builtin-s1" and d["cells"][7]["id"] == "flaky-code-only-manual-s1"'
json_check "$WORK/plan.json" 'all("run --app " in c["command"] and "--cell " + c["id"] in c["command"] for c in d["cells"])'
"$OPTIMAS" campaign "$WORK/campaign.yml" --dry-run > "$WORK/plan.txt" || fail "the dry run failed"
"$OPTIMAS" campaign "$OPTIMAS_SOURCE_DIR/examples/campaign.yml" --dry-run --json > "$WORK/example.json" || fail "the example's dry run failed"
json_check "$WORK/example.json" 'len(d["cells"]) == 48 and d["cells"][0]["id"] == "stream-pc-builtin-s1" and d["cells"][-1]["id"] == "digits-code-only-manual-s1"' \
  "examples/campaign.yml: 3 applications x 8 subsets x 2 backends"
[ "$(grep -c -- '--campaign scenario-ablation' "$WORK/plan.txt")" -eq 8 ] || fail "the dry run's text should list 8 commands"$'\n'"$(cat "$WORK/plan.txt")"
[ ! -e "$RUNS" ] || fail "the dry run wrote $RUNS"

# --- the campaign: builtin cells run, manual cells wait ------------------------------------
rc=0
"$OPTIMAS" campaign "$WORK/campaign.yml" > "$WORK/table1.md" 2> "$WORK/campaign.log" || rc=$?
[ "$rc" -eq 4 ] || fail "the campaign should wait for the manual replies (exit 4), got $rc"$'\n'"$(tail -30 "$WORK/campaign.log")"
[ -e "$WORK/flaky-failed-once" ] || fail "the flaky stand-in never failed"
grep -q 'requeued (attempt 2 of 3)' "$WORK/campaign.log" || fail "no cell was requeued"$'\n'"$(cat "$WORK/campaign.log")"
json_check "$C/state.json" 'sorted(c["state"] for c in d["cells"]) == ["done"] * 4 + ["waiting"] * 4' \
  "builtin cells done, manual ones waiting: $(cat "$C/state.json")"
json_check "$C/state.json" 'all(c["state"] == "waiting" for c in d["cells"] if "-manual-" in c["id"])'
json_check "$C/table.json" 'd["cells"] == {"total": 8, "done": 4, "failed": 0, "pending": 4}' "the table while cells wait"
answered=$(campaign_answer "$RUNS")
[ "$answered" -eq 4 ] || fail "expected 4 manual prompts to answer, got $answered"
waiting_runs=$(python3 -c 'import json,sys; print(" ".join(sorted(c["run_id"] for c in json.load(open(sys.argv[1]))["cells"] if c["state"] == "waiting")))' "$C/state.json")
# The run folders (by their ids: the index's side files, index.sqlite-wal and -shm, come and go).
run_folders() { ls "$RUNS" | grep -E '^[0-9a-f-]{36}$' | sort; }
runs_before=$(run_folders)

# --- resume: the manual cells continue their runs ------------------------------------------
rc=0
"$OPTIMAS" campaign "$WORK/campaign.yml" --resume > "$WORK/table.md" 2> "$WORK/resume1.log" || rc=$?
[ "$rc" -eq 0 ] || fail "the resumed campaign exited $rc"$'\n'"$(tail -30 "$WORK/resume1.log")"
grep -q '8 cell(s), 4 to run' "$WORK/resume1.log" || fail "the resume should run the 4 manual cells"$'\n'"$(cat "$WORK/resume1.log")"
[ "$(run_folders)" = "$runs_before" ] ||
  fail "the manual cells should continue their own runs, not start new ones: $(comm -13 <(echo "$runs_before") <(run_folders))"
json_check "$C/state.json" "' '.join(sorted(c['run_id'] for c in d['cells'] if '-manual-' in c['id'])) == '$waiting_runs'"
json_check "$C/state.json" 'len(d["cells"]) == 8 and all(c["state"] == "done" for c in d["cells"])' \
  "every cell should be done: $(cat "$C/state.json")"
json_check "$C/state.json" 'sum(1 for c in d["cells"] if len(c["runs"]) == 2) == 1' "exactly one cell should have a failed first run"
json_check "$C/state.json" 'all(c["job"].startswith("local-") for c in d["cells"])' "each cell records its job"
requeued=$(python3 -c 'import json,sys; print([c for c in json.load(open(sys.argv[1]))["cells"] if len(c["runs"]) == 2][0]["id"])' "$C/state.json")
case $requeued in flaky-*) ;; *) fail "the requeued cell $requeued is not one of the flaky stand-in" ;; esac
first=$(python3 -c 'import json,sys; print([c for c in json.load(open(sys.argv[1]))["cells"] if len(c["runs"]) == 2][0]["runs"][0])' "$C/state.json")
json_check "$RUNS/$first/run.json" 'd["status"] == "failed"' "the first attempt's run should have failed"
[ -f "$C/logs/$requeued.attempt-1.log" ] || fail "the first attempt's log was not kept"
grep -rq 'failing once on purpose' "$RUNS/$first" || fail "the first attempt did not fail where the stand-in fails"
for f in campaign.yml table.json; do [ -f "$C/$f" ] || fail "no $C/$f"; done

# Every cell's run: tagged, with its subset; the code-only baseline's prompt has no diagnostics.
python3 - "$C/state.json" "$RUNS" <<'PY' || fail "a cell's run.json is not what the cell asked for"
import json, sys, os
state = json.load(open(sys.argv[1]))
labels = {"pc_roofline": "PC+Roofline", "code-only": "code-only"}
for c in state["cells"]:
    run = json.load(open(os.path.join(sys.argv[2], c["run_id"], "run.json")))
    assert run["status"] == "finished", (c["id"], run["status"])
    assert run["campaign"] == {"id": "scenario-ablation", "cell": c["id"], "seed": 1}, run["campaign"]
    app, rest = c["id"].split("-", 1)
    subset = rest.rsplit("-", 2)[0]
    assert run["diagnostics"] == labels[subset] == c["diagnostics"], (c["id"], run["diagnostics"])
    v = run["variants"][0]
    prompt = open(os.path.join(sys.argv[2], c["run_id"], v["prompt"])).read()
    if subset == "code-only":
        assert "code-only baseline" in prompt and "[PC1]" not in prompt and "[RF1]" not in prompt, c["id"]
    else:
        assert "[PC1]" in prompt and "[RF1]" in prompt, c["id"]
    if c["backend"] == "builtin":
        assert v["status"] == "no_edits", (c["id"], v["status"])
    else:
        assert v["validation"]["passed"] is True, (c["id"], v["status"], v.get("reason"))
PY

# --- the table -----------------------------------------------------------------------------
"$OPTIMAS" campaign table "$CAMPAIGN_ID" --runs-dir "$RUNS" --format json > "$WORK/table.json" || fail "campaign table failed"
json_check "$WORK/table.json" 'd["schema"] == "optimas.campaign-table/1" and d["campaign"] == "scenario-ablation"'
json_check "$WORK/table.json" 'd["cells"] == {"total": 8, "done": 8, "failed": 0, "pending": 0}' "the table's cell counts"
json_check "$WORK/table.json" '[(r["diagnostics"], r["backend"]) for r in d["rows"]] == [("PC+Roofline", "builtin"), ("PC+Roofline", "manual"), ("code-only", "builtin"), ("code-only", "manual")]'
json_check "$WORK/table.json" 'all(r["cells"] == 2 and r["runs"] == 2 and r["speedup"]["n"] == 2 and r["speedup"]["geomean"] >= 1 for r in d["rows"])'
json_check "$WORK/table.json" 'all(r["valid_edit_rate"] is None and r["accepted_rate"] == 0 and r["cost_usd"] == 0 and r["speedup"]["geomean"] == 1 for r in d["rows"] if r["backend"] == "builtin")' \
  "the builtin rules find no launch to edit in the stand-in: nothing proposed, nothing accepted"
json_check "$WORK/table.json" 'all(r["valid_edit_rate"] == 1 and r["cost_usd"] is None for r in d["rows"] if r["backend"] == "manual")' \
  "the manual cells' edit builds and validates; a manual answer's cost is unknown: $(cat "$WORK/table.json")"
json_check "$WORK/table.json" 'd["rows"][1]["hallucinations"] == 0 and d["rows"][3]["hallucinations"] == 4' \
  "citing PC1 and RF1 to a code-only prompt is two hallucinations per run"
json_check "$WORK/table.json" 'd["rows"][1]["evidence_coverage"] == 1 and d["rows"][3]["evidence_coverage"] == 0' \
  "the manual edit cites evidence the PC+Roofline prompt has and the code-only prompt lacks"
cmp <(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); t.pop("generated"); print(json.dumps(t, sort_keys=True))' "$C/table.json") \
    <(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); t.pop("generated"); print(json.dumps(t, sort_keys=True))' "$WORK/table.json") ||
  fail "table.json and campaign table --format json differ"
"$OPTIMAS" campaign table "$CAMPAIGN_ID" --runs-dir "$RUNS" --format csv > "$WORK/table.csv"
[ "$(wc -l < "$WORK/table.csv")" -eq 5 ] || fail "the CSV should have a header and 4 rows"$'\n'"$(cat "$WORK/table.csv")"
grep -q '^code-only,manual,2,2,1,' "$WORK/table.csv" || fail "no code-only manual row in the CSV"$'\n'"$(cat "$WORK/table.csv")"
grep -q '^| PC+Roofline | manual | 1 | 1 | 2 | 2 | 100% |' "$WORK/table.md" || fail "the campaign's Markdown table lacks the manual row"$'\n'"$(cat "$WORK/table.md")"
campaign_stable_table "$RUNS" "$CAMPAIGN_ID" > "$WORK/stable.json"
json_check "$WORK/stable.json" '"generated" not in d and all("speedup" not in r and "accepted_rate" not in r for r in d["rows"]) and len(d["rows"]) == 4'

"$OPTIMAS" runs list --runs-dir "$RUNS" --campaign "$CAMPAIGN_ID" --json > "$WORK/list.json"
json_check "$WORK/list.json" 'len(d) == 9 and all(r["campaign"] == "scenario-ablation" for r in d)' "runs list --campaign should list 9 runs"
"$OPTIMAS" runs list --runs-dir "$RUNS" --campaign nothing --json > "$WORK/none.json"
json_check "$WORK/none.json" 'd == []'

"$OPTIMAS" campaign status "$CAMPAIGN_ID" --runs-dir "$RUNS" > "$WORK/status.txt" || fail "campaign status failed"
[ "$(grep -cE '^  (stream|flaky)-.* done ' "$WORK/status.txt")" -eq 8 ] || fail "status should list 8 done cells"$'\n'"$(cat "$WORK/status.txt")"

# --- resume again: nothing to do -----------------------------------------------------------
before=$(run_folders)
"$OPTIMAS" campaign "$WORK/campaign.yml" --resume > /dev/null 2> "$WORK/resume.log" || fail "the resume failed"$'\n'"$(cat "$WORK/resume.log")"
grep -q '8 cell(s), 0 to run' "$WORK/resume.log" || fail "the resume should run nothing"$'\n'"$(cat "$WORK/resume.log")"
[ "$(run_folders)" = "$before" ] || fail "the resume made new runs: $(comm -13 <(echo "$before") <(run_folders))"
expect_fail 2 'has started before.*--resume' -- "$OPTIMAS" campaign "$WORK/campaign.yml"
expect_fail 2 'no campaign nothing' -- "$OPTIMAS" campaign table nothing --runs-dir "$RUNS"
pass "campaign: 8 cells, one requeued, manual cells resumed, table complete, resume ran nothing"
