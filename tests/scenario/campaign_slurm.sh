# Issue #16's scenario against a real Slurm: campaign_lib.sh's campaign of 8 cells (two host
# stand-ins of the stream example x pc+roofline and code-only x builtin and manual, each a whole
# `optimas run` from the recorded H200 profile) submitted through `optimas campaign` with
# `launcher: slurm` to the test's own slurmctld/slurmd (slurm_lib.sh). Checked:
#   - every cell is a batch job named optimas-<cell>, its Slurm job id recorded in state.json
#     (a job that exits 3, a run finished without improvement, is FAILED to Slurm and done to
#     the campaign: the run decides);
#   - one builtin cell is killed with scancel while it runs, seen cancelled, and submitted again
#     by the campaign (requeue: 2) as a new job, which finishes;
#   - the flaky stand-in's failed first build is requeued as with the local launcher;
#   - the manual cells wait for their replies (exit 4); once saved, --resume submits them again
#     and the campaign ends with every cell done (exit 0) and the table complete;
#   - the same campaign with the local launcher gives the same table, up to what timings decide
#     (campaign_stable_table: speedup, accepted_rate, generated).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"
source "$(dirname "$0")/campaign_lib.sh"

slurm_start

mkdir -p "$WORK/slurm" "$WORK/local"
campaign_apps "$WORK/slurm"
campaign_file "$WORK/slurm/campaign.yml" "$WORK/slurm/runs" slurm "{partition: test}"
C="$WORK/slurm/runs/campaigns/$CAMPAIGN_ID"

# --- the campaign through Slurm, in the background: one running cell is killed -------------
rc_file=$WORK/slurm/campaign.rc
(rc=0; "$OPTIMAS" campaign "$WORK/slurm/campaign.yml" >"$WORK/slurm/table1.md" 2>"$WORK/slurm/campaign.log" || rc=$?
 echo $rc >"$rc_file") &
campaign_pid=$!

# The first builtin cell of the stream stand-in that Slurm reports running (a builtin cell runs
# to its end, so the kill is all that can make it fail).
killed_job= killed_cell=
deadline=$((SECONDS + 300))
while [ -z "$killed_job" ]; do
  [ $SECONDS -lt $deadline ] || slurm_fail "no stream builtin cell was seen running in 300 s"$'\n'"$(cat "$WORK/slurm/campaign.log")"
  [ ! -f "$rc_file" ] || slurm_fail "the campaign ended (exit $(cat "$rc_file")) before a cell was seen running"$'\n'"$(cat "$WORK/slurm/campaign.log")"
  read -r killed_job killed_cell <<<"$(squeue -h -t running -o '%i %j' | grep -E ' optimas-stream-.*-builtin-s1$' | head -1)" || true
  [ -n "$killed_job" ] || sleep 0.2
done
killed_cell=${killed_cell#optimas-}
scancel "$killed_job" || slurm_fail "scancel $killed_job"
echo "killed cell $killed_cell (job $killed_job) with scancel while it ran"

deadline=$((SECONDS + 600))
while [ ! -f "$rc_file" ]; do
  [ $SECONDS -lt $deadline ] || slurm_fail "the campaign has not ended 600 s after the kill"$'\n'"$(tail -30 "$WORK/slurm/campaign.log")"
  sleep 0.5
done
wait "$campaign_pid" || true
rc=$(cat "$rc_file")
[ "$rc" -eq 4 ] || slurm_fail "the campaign should wait for the manual replies (exit 4), got $rc"$'\n'"$(tail -40 "$WORK/slurm/campaign.log")"
grep -qE "$killed_cell: cancelled.*requeued \(attempt 2 of 3\)" "$WORK/slurm/campaign.log" ||
  fail "the killed cell $killed_cell was not seen cancelled and requeued"$'\n'"$(cat "$WORK/slurm/campaign.log")"
[ -e "$WORK/slurm/flaky-failed-once" ] || fail "the flaky stand-in never failed"
python3 - "$C/state.json" "$killed_cell" "$killed_job" <<'PY' || fail "state.json after the first pass (above)"
import json, re, sys
d, killed, killed_job = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
bad = []
for c in d["cells"]:
    want = "waiting" if "-manual-" in c["id"] else "done"
    if c["state"] != want:
        bad.append(f"cell {c['id']} is {c['state']}, expected {want}")
    if not re.fullmatch(r"[0-9]+", str(c.get("job") or "")):
        bad.append(f"cell {c['id']} records no Slurm job id: {c.get('job')!r}")
    if c["id"] == killed and (c["attempts"] != 2 or str(c["job"]) == killed_job):
        bad.append(f"the killed cell should have run twice, the second time as a new job: {c}")
if len(d["cells"]) != 8 or not any(c["id"] == killed for c in d["cells"]):
    bad.append("expected 8 cells, the killed one among them")
if bad:
    print("\n".join(bad) + "\n" + json.dumps(d, indent=1), file=sys.stderr)
    sys.exit(1)
PY
[ -f "$C/logs/$killed_cell.attempt-1.log" ] || fail "the killed attempt's log was not kept beside the new one"

# --- the manual replies, then --resume through Slurm -----------------------------------------
answered=$(campaign_answer "$WORK/slurm/runs")
[ "$answered" -eq 4 ] || fail "expected 4 manual prompts to answer, got $answered"
rc=0
"$OPTIMAS" campaign "$WORK/slurm/campaign.yml" --resume >"$WORK/slurm/table.md" 2>"$WORK/slurm/resume.log" || rc=$?
[ "$rc" -eq 0 ] || slurm_fail "the resumed campaign exited $rc"$'\n'"$(tail -40 "$WORK/slurm/resume.log")"
json_check "$C/state.json" 'len(d["cells"]) == 8 and all(c["state"] == "done" for c in d["cells"])' \
  "every cell should be done: $(cat "$C/state.json")"
json_check "$C/table.json" 'd["cells"] == {"total": 8, "done": 8, "failed": 0, "pending": 0} and len(d["rows"]) == 4' \
  "the table should be complete: $(cat "$C/table.json")"
# Each recorded job is the cell's own in Slurm, and has ended.
while read -r cell job; do
  line=$(scontrol -o show job "$job" 2>&1) || fail "cell $cell records job $job, which slurmctld does not know: $line"
  grep -q " JobName=optimas-$cell " <<< "$line" || fail "cell $cell records job $job, which is another's: $line"
  grep -qE " JobState=(COMPLETED|FAILED) " <<< "$line" || fail "cell $cell's job $job has not ended: $line"
done < <(python3 -c 'import json,sys; [print(c["id"], c["job"]) for c in json.load(open(sys.argv[1]))["cells"]]' "$C/state.json")
campaign_stable_table "$WORK/slurm/runs" "$CAMPAIGN_ID" >"$WORK/slurm/stable.json" || fail "campaign table (slurm)"
slurm_stop

# --- the same campaign with the local launcher: the same table --------------------------------
campaign_apps "$WORK/local"
campaign_file "$WORK/local/campaign.yml" "$WORK/local/runs" local "{jobs: 2}"
rc=0
"$OPTIMAS" campaign "$WORK/local/campaign.yml" >/dev/null 2>"$WORK/local/campaign.log" || rc=$?
[ "$rc" -eq 4 ] || fail "local: the campaign should wait for the manual replies (exit 4), got $rc"$'\n'"$(tail -30 "$WORK/local/campaign.log")"
answered=$(campaign_answer "$WORK/local/runs")
[ "$answered" -eq 4 ] || fail "local: expected 4 manual prompts to answer, got $answered"
rc=0
"$OPTIMAS" campaign "$WORK/local/campaign.yml" --resume >/dev/null 2>"$WORK/local/resume.log" || rc=$?
[ "$rc" -eq 0 ] || fail "local: the resumed campaign exited $rc"$'\n'"$(tail -30 "$WORK/local/resume.log")"
campaign_stable_table "$WORK/local/runs" "$CAMPAIGN_ID" >"$WORK/local/stable.json" || fail "campaign table (local)"
diff -u "$WORK/local/stable.json" "$WORK/slurm/stable.json" >&2 ||
  fail "the table through Slurm differs from the local launcher's (above: - local, + slurm)"

pass "campaign of 8 cells through slurmctld: $killed_cell killed with scancel (job $killed_job) and requeued, the table complete and equal to the local launcher's"
