# Issue #16's scenario against a real Slurm: a campaign of 8 cells (the 8 default diagnostic
# subsets, builtin backend, on the host stand-in of examples/stream and its recorded H200
# profile) submitted through `optimas campaign` with `launcher: slurm` to the test's own
# slurmctld/slurmd (slurm_lib.sh); one cell is killed with scancel while it runs and the
# campaign submits it again (requeue: 2); the table is complete. Then the same campaign with the
# local launcher gives the same table, up to what timings decide (below).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

# Two CPUs' worth of cells at a time at most (the stand-in GPUs: 2), whatever this machine has.
slurm_start
D="$OPTIMAS_TEST_DATA/h200/stream"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"

# campaign_file NAME LAUNCHER-BLOCK: the campaign, identical but for its launcher. Nothing is
# accepted (--min-speedup 1000), so that which variant wins does not depend on the timings.
campaign_file() {
  cat >"$WORK/$1.yml" <<EOF
campaign: slurm-ablation
applications: [app]
backends: [builtin]
repeats: 1
iterations: 1
run_options: [--no-tune, --import, "$D", --runs, "2", --warmup, "0", --fresh-seeds, "0", --min-speedup, "1000",
              --cache-dir, "$WORK/cache-$1"]
runs_dir: runs-$1
gpus: 1
time_limit: 10m
requeue: 2
launcher: $2
EOF
}
campaign_file slurm "{name: slurm, options: {partition: test}}"
campaign_file local "{name: local, options: {jobs: 2}}"

"$OPTIMAS" campaign "$WORK/slurm.yml" --dry-run >"$WORK/dry.out" 2>"$WORK/dry.log" || fail "--dry-run: $(cat "$WORK/dry.log")"
cells=$(grep -c -- '-builtin-s1' "$WORK/dry.out" || true)
[ "$cells" -eq 8 ] || fail "--dry-run lists $cells cells, expected 8:"$'\n'"$(cat "$WORK/dry.out")"

# The Slurm campaign, in the background: the test kills one of its cells' jobs while it runs.
cd "$WORK"
rc_file=$WORK/slurm.rc
("$OPTIMAS" campaign "$WORK/slurm.yml" >"$WORK/slurm.out" 2>"$WORK/slurm.log"; echo $? >"$rc_file") &
campaign_pid=$!

# The first cell whose job Slurm reports running (job names are optimas-<cell>).
killed_job= killed_cell=
deadline=$((SECONDS + 240))
while [ -z "$killed_job" ]; do
  [ $SECONDS -lt $deadline ] || slurm_fail "no cell's job was seen running in 240 s"$'\n'"$(cat "$WORK/slurm.log")"
  [ -f "$rc_file" ] && slurm_fail "the campaign ended (exit $(cat "$rc_file")) before a cell was seen running"$'\n'"$(cat "$WORK/slurm.log")"
  read -r killed_job killed_cell <<<"$(squeue -h -t running -o '%i %j' | head -1)" || true
  [ -n "$killed_job" ] || sleep 0.2
done
killed_cell=${killed_cell#optimas-}
scancel "$killed_job" || slurm_fail "scancel $killed_job"
echo "killed cell $killed_cell (job $killed_job) while it ran"

deadline=$((SECONDS + 480))
while [ ! -f "$rc_file" ]; do
  [ $SECONDS -lt $deadline ] || slurm_fail "the campaign has not ended 480 s after the kill"$'\n'"$(tail -30 "$WORK/slurm.log")"
  sleep 0.5
done
wait "$campaign_pid" || true
rc=$(cat "$rc_file")
[ "$rc" -eq 0 ] || slurm_fail "optimas campaign (slurm) exited $rc"$'\n'"$(tail -40 "$WORK/slurm.log")"

folder=$WORK/runs-slurm/campaigns/slurm-ablation
[ -f "$folder/state.json" ] || fail "no $folder/state.json"
[ -f "$folder/campaign.yml" ] || fail "no copy of the campaign file in $folder"
# Every cell done, each with its Slurm job id and a run; the killed one submitted again, its
# recorded job the new one.
python3 - "$folder/state.json" "$killed_cell" "$killed_job" <<'PY' || fail "state.json (above)"
import json, re, sys
state, killed, killed_job = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
cells = state["cells"] if isinstance(state, dict) and "cells" in state else state
bad = []
if len(cells) != 8:
    bad.append(f"{len(cells)} cells, expected 8")
for c in cells:
    if c["state"] != "done":
        bad.append(f"cell {c['id']} is {c['state']}")
    if not re.fullmatch(r"[0-9]+(_[0-9]+)?", str(c.get("job") or "")):
        bad.append(f"cell {c['id']} has no Slurm job id: {c.get('job')!r}")
    if not c.get("run_id"):
        bad.append(f"cell {c['id']} has no run")
    if c["id"] == killed:
        if c["attempts"] < 2:
            bad.append(f"the killed cell {killed} was not submitted again (attempts {c['attempts']})")
        if str(c["job"]) == killed_job:
            bad.append(f"the killed cell {killed} still records the cancelled job {killed_job}")
    elif c["attempts"] != 1:
        bad.append(f"cell {c['id']} ran {c['attempts']} times")
if not any(c["id"] == killed for c in cells):
    bad.append(f"no cell {killed} (the killed job's name)")
if bad:
    print("\n".join(bad), file=sys.stderr)
    print(json.dumps(state, indent=1), file=sys.stderr)
    sys.exit(1)
PY
[ -s "$folder/logs/$killed_cell.log" ] || fail "no log of the killed cell $killed_cell"
for c in $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(" ".join(c["id"] for c in (s["cells"] if "cells" in s else s)))' "$folder/state.json"); do
  json_check "$WORK/runs-slurm/$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print([c["run_id"] for c in (s["cells"] if "cells" in s else s) if c["id"]==sys.argv[2]][0])' "$folder/state.json" "$c")/run.json" \
    "d['campaign']['id'] == 'slurm-ablation' and d['campaign']['cell'] == '$c' and d['campaign']['seed'] == 1" \
    "the run of cell $c is not tagged with the campaign, its cell and seed"
done

"$OPTIMAS" campaign table slurm-ablation --runs-dir "$WORK/runs-slurm" --format json >"$WORK/table-slurm.json" \
  2>"$WORK/table.log" || fail "campaign table: $(cat "$WORK/table.log")"
cmp -s <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("generated"); print(json.dumps(d, sort_keys=True))' "$WORK/table-slurm.json") \
  <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("generated"); print(json.dumps(d, sort_keys=True))' "$folder/table.json") ||
  fail "campaign table --format json differs from $folder/table.json"
json_check "$WORK/table-slurm.json" \
  "d['schema'] == 'optimas.campaign-table/1' and d['cells'] == {'total': 8, 'done': 8, 'failed': 0, 'pending': 0}" \
  "the table is not complete: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cells"])' "$WORK/table-slurm.json")"
json_check "$WORK/table-slurm.json" \
  "sorted(r['diagnostics'] for r in d['rows']) == sorted(['PC', 'IA', 'Roofline', 'PC+IA', 'PC+Roofline', 'IA+Roofline', 'PC+IA+Roofline', 'code-only']) and all(r['backend'] == 'builtin' and r['cells'] == 1 and r['runs'] == 1 for r in d['rows'])" \
  "the table's rows are not one per subset, each of one cell and one run (the killed attempt's run counted?)"
slurm_stop

# The same campaign on this machine: the same table, up to what the timings decide (the speedup
# figures, and when the table was made). The number of speedups, the rates and everything else
# must be equal.
"$OPTIMAS" campaign "$WORK/local.yml" >"$WORK/local.out" 2>"$WORK/local.log" ||
  fail "optimas campaign (local) exited $?"$'\n'"$(tail -40 "$WORK/local.log")"
"$OPTIMAS" campaign table slurm-ablation --runs-dir "$WORK/runs-local" --format json >"$WORK/table-local.json" \
  2>"$WORK/table.log" || fail "campaign table (local): $(cat "$WORK/table.log")"
python3 - "$WORK/table-slurm.json" "$WORK/table-local.json" <<'PY' || fail "the local launcher's table differs from Slurm's (above)"
import json, sys
def untimed(path):
    d = json.load(open(path))
    d.pop("generated", None)
    for r in d["rows"]:
        if isinstance(r.get("speedup"), dict):
            for k in ("geomean", "ci_low", "ci_high"):
                r["speedup"].pop(k, None)
    d["rows"].sort(key=lambda r: (r["diagnostics"], r["backend"]))
    return d
a, b = untimed(sys.argv[1]), untimed(sys.argv[2])
if a != b:
    print("slurm:", json.dumps(a, indent=1, sort_keys=True), file=sys.stderr)
    print("local:", json.dumps(b, indent=1, sort_keys=True), file=sys.stderr)
    sys.exit(1)
PY
pass "campaign of 8 cells through slurmctld: cell $killed_cell killed with scancel (job $killed_job) and requeued; table complete and equal to the local launcher's"
