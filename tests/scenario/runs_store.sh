# optimas runs list|show|reindex and corpus export on a store whose files went missing, and with an
# A/A run (issue 32): a deleted run.json is named by list, show and reindex instead of the run
# staying "finished" or vanishing; show warns about deleted journals; an A/A run is marked A/A in
# the listing and left out of the corpus unless named. The run folders are written by hand, as
# the loop writes them (docs/loop.md), so no GPU, compiler or model is needed.
source "$(dirname "$0")/lib.sh"

RUNS="$WORK/runs"
# make ID STARTED AA: a finished run with one measured, validated variant and its journals.
make() {
  python3 - "$RUNS" "$1" "$2" "$3" <<'PY'
import json, os, sys
runs, rid, started, aa = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "aa"
vdir = "iterations/1/attempt-1"
os.makedirs(os.path.join(runs, rid, vdir))
run = {"schema": "optimas.run/1", "id": rid, "app": "stream", "status": "finished", "outcome": "no_improvement",
       "backend": "builtin", "model": "builtin", "diagnostics": "PC+IA+Roofline", "started": started,
       "variants": [{"key": "i1a1", "dir": vdir, "status": "rejected", "reason": "no significant change",
                     "validation": {"passed": True},
                     "measurement": {"verdict": "no significant change", "speedup": 1.0, "ci": [0.99, 1.01],
                                     "p_value": 0.9, "configs": {}}}]}
if aa:
    run["aa"] = True
    run["variants"][0]["aa"] = True
json.dump(run, open(os.path.join(runs, rid, "run.json"), "w"))
json.dump({}, open(os.path.join(runs, rid, "options.json"), "w"))
for journal in ("validation.jsonl", "measurements.jsonl"):
    open(os.path.join(runs, rid, vdir, journal), "w").write("{}\n")
PY
}
A=aaaaaaaa-0000-4000-8000-000000000001
B=bbbbbbbb-0000-4000-8000-000000000002
C=cccccccc-0000-4000-8000-000000000003
mkdir -p "$RUNS"
make "$A" 2026-11-30T01:00:00Z no
make "$B" 2026-11-30T02:00:00Z no
make "$C" 2026-11-30T03:00:00Z aa

"$OPTIMAS" runs reindex --runs-dir "$RUNS" > "$WORK/out" 2> "$WORK/err" || fail "reindex: $(cat "$WORK/err")"
grep -q "^3 run(s) indexed" "$WORK/out" || fail "reindex: $(cat "$WORK/out")"

# The A/A run is marked in the listing, its backend column and its JSON.
"$OPTIMAS" runs list --runs-dir "$RUNS" > "$WORK/list" || fail "runs list"
grep -E "^$C .* A/A " "$WORK/list" > /dev/null || fail "the A/A run is not marked A/A:"$'\n'"$(cat "$WORK/list")"
grep -E "^$A .* builtin " "$WORK/list" > /dev/null || fail "run A is not a builtin run:"$'\n'"$(cat "$WORK/list")"
"$OPTIMAS" runs list --runs-dir "$RUNS" --json > "$WORK/list.json" || fail "runs list --json"
json_check "$WORK/list.json" "{r['id']: r['aa'] for r in d} == {'$A': False, '$B': False, '$C': True}" "aa in runs list --json"
"$OPTIMAS" runs show "${C:0:8}" --runs-dir "$RUNS" | grep -q "(A/A" || fail "runs show does not say A/A"

# The corpus of every run leaves the A/A run out and says so; named, it is exported, marked.
"$OPTIMAS" corpus export --runs-dir "$RUNS" -o "$WORK/corpus.jsonl" 2> "$WORK/err" || fail "corpus export: $(cat "$WORK/err")"
python3 - "$WORK/corpus.jsonl" "$C" <<'PY' || fail "the A/A run is in the corpus"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert len(records) == 2 and all(r["run_id"] != sys.argv[2] and r["aa"] is False for r in records), records
PY
grep -q "A/A run(s) left out of the corpus" "$WORK/err" || fail "corpus export does not say what it left out"
"$OPTIMAS" corpus export "$C" --runs-dir "$RUNS" -o "$WORK/aa.jsonl" || fail "corpus export of the A/A run"
json_check "$WORK/aa.jsonl" "d['aa'] is True" "the named A/A run's record"

# Journals deleted: show warns, naming each file, and still shows the run.
rm "$RUNS/$B/iterations/1/attempt-1/validation.jsonl" "$RUNS/$B/iterations/1/attempt-1/measurements.jsonl"
"$OPTIMAS" runs show "$B" --runs-dir "$RUNS" > "$WORK/out" 2> "$WORK/err" || fail "runs show $B: $(cat "$WORK/err")"
grep -q "attempt-1/validation.jsonl: variant i1a1 has a validation in run.json, but its journal" "$WORK/err" \
  || fail "runs show does not warn about validation.jsonl:"$'\n'"$(cat "$WORK/err")"
grep -q "attempt-1/measurements.jsonl: variant i1a1 has a measurement" "$WORK/err" \
  || fail "runs show does not warn about measurements.jsonl:"$'\n'"$(cat "$WORK/err")"
"$OPTIMAS" runs show "$A" --runs-dir "$RUNS" > /dev/null 2> "$WORK/err"
[ ! -s "$WORK/err" ] || fail "runs show warns about a whole run:"$'\n'"$(cat "$WORK/err")"

# run.json deleted: list marks the run missing and says why, show names the file, reindex too.
rm "$RUNS/$A/run.json"
"$OPTIMAS" runs list --runs-dir "$RUNS" > "$WORK/list" 2> "$WORK/err" || fail "runs list: $(cat "$WORK/err")"
grep -E "^$A .* missing " "$WORK/list" > /dev/null || fail "run A is not marked missing:"$'\n'"$(cat "$WORK/list")"
grep -q "run $A: .*/run.json is gone from its folder" "$WORK/err" || fail "runs list says nothing:"$'\n'"$(cat "$WORK/err")"
expect_fail 1 "run $A: .*run.json is gone from its folder" -- "$OPTIMAS" runs show "${A:0:8}" --runs-dir "$RUNS"
"$OPTIMAS" runs reindex --runs-dir "$RUNS" > "$WORK/out" 2> "$WORK/err" || fail "reindex: $(cat "$WORK/err")"
grep -q "^2 run(s) indexed" "$WORK/out" || fail "reindex: $(cat "$WORK/out")"
grep -q "run $A: .*run.json is gone from its folder.*; not indexed" "$WORK/err" || fail "reindex says nothing:"$'\n'"$(cat "$WORK/err")"
"$OPTIMAS" runs list --runs-dir "$RUNS" > "$WORK/list" 2> /dev/null || fail "runs list after reindex"
grep -E "^$A .* missing " "$WORK/list" > /dev/null || fail "after reindex, run A vanished:"$'\n'"$(cat "$WORK/list")"

# run.json broken: unreadable, with the file and line.
printf '{"id": ' > "$RUNS/$B/run.json"
"$OPTIMAS" runs list --runs-dir "$RUNS" > "$WORK/list" 2> "$WORK/err" || fail "runs list: $(cat "$WORK/err")"
grep -E "^$B .* unreadable " "$WORK/list" > /dev/null || fail "run B is not marked unreadable:"$'\n'"$(cat "$WORK/list")"
grep -q "$B/run.json:1" "$WORK/err" || fail "runs list does not name the broken file:"$'\n'"$(cat "$WORK/err")"
pass "runs_store: lost and broken run.json named by list, show and reindex; missing journals warned; A/A marked and left out of the corpus"
