# Several GPUs measuring the tuning stage at once (--gpus, loop/slots.cpp), with
# CUDA_VISIBLE_DEVICES slots on the host stand-in (tests/scenario/tune-app, lean as tune.sh makes
# it): every run goes through a wrapper that writes to its stderr log the GPU it was given, when
# it started and ended, and its folder. Checked here:
#   - no two runs ever overlap on one GPU (a slot measures one point at a time, its baseline runs
#     beside it included), and the two GPUs did measure at once;
#   - every GPU is used;
#   - every ratio uses its own GPU's baseline: a point's runs, its variant's and the baseline's
#     beside it, all ran on one GPU, the baseline's in that GPU's own copy (work/slot-N), and the
#     point's record names that GPU;
#   - the points are those of the serial search, recorded in its order (t1, t2, ... in grid
#     order), with one best point (CHUNK 256, as tune_pipeline.sh finds it);
#   - nothing of the slots is left in the run folder.
# At the watch level (--sandbox watch) one GPU measures, and the run says why.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/tune-app"
RUNS="$WORK/runs"
trap 'rm -rf "$WORK"' EXIT
cp -r "$APP" "$WORK/lean"
python3 "$OPTIMAS_SOURCE_DIR/tests/scenario/tune-app/lean.py" "$WORK/lean/main.cu"
cat > "$WORK/lean/on-gpu.sh" <<'SH'
s=$(date +%s%N)
"$@"
rc=$?
echo "on-gpu gpu=${CUDA_VISIBLE_DEVICES:-none} start=$s end=$(date +%s%N) cwd=$PWD" >&2
exit $rc
SH
sed -i 's|  command: ./tuned |  command: sh on-gpu.sh ./tuned |' "$WORK/lean/optimas.yml"
grep -q 'sh on-gpu.sh ./tuned' "$WORK/lean/optimas.yml" || fail "the stand-in's run command was not wrapped"

# The serial search's points, in its order: the dry run's plan.
"$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --dry-run --json > "$WORK/plan.json" ||
  fail "the dry run failed"
rc=0
"$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --runs 8 --no-cache --gpus 0,1 --json \
  > "$WORK/gpus.json" 2> "$WORK/gpus.log" || rc=$?
[ "$rc" -eq 0 ] || fail "exit $rc, expected 0 (a point is faster)"$'\n'"$(tail -30 "$WORK/gpus.log")"
if ! grep -q "2 GPUs measure at once (0,1)" "$WORK/gpus.log"; then
  grep -q "at the watch level" "$WORK/gpus.log" && skip "no walls here (neither bwrap nor unshare): one GPU measures"
  fail "the run did not measure on two GPUs"$'\n'"$(grep tune "$WORK/gpus.log" | head -5)"
fi
python3 - "$WORK/gpus.json" "$RUNS" "$WORK/plan.json" <<'PY' || fail "the slots' runs (above)"
import glob, json, os, re, sys
d = json.load(open(sys.argv[1]))
run = os.path.join(sys.argv[2], d["id"])
t = d["tune"]
bad = []
runs = []  # (gpu, start, end, point key, role, folder)
for log in glob.glob(os.path.join(run, "tune", "*", "runs", "*.stderr.log")):
    key = log.split(os.sep)[-3]
    role = "baseline" if re.search(r"(\.baseline\.|-baseline-)", os.path.basename(log)) else "variant"
    for line in open(log, errors="replace"):
        m = re.match(r"on-gpu gpu=(\S+) start=(\d+) end=(\d+) cwd=(.*)$", line.strip())
        if m:
            runs.append((m[1], int(m[2]), int(m[3]), key, role, m[4]))
if len(runs) < 20:
    bad.append(f"only {len(runs)} runs logged")
gpus = sorted({r[0] for r in runs})
if gpus != ["0", "1"]:
    bad.append(f"the runs saw GPUs {gpus}, not 0 and 1")
for g in gpus:
    mine = sorted(r for r in runs if r[0] == g)
    for a, b in zip(mine, mine[1:]):
        if b[1] < a[2]:
            bad.append(f"GPU {g}: {a[3]} {a[4]} and {b[3]} {b[4]} overlap")
spans = {}
for r in runs:
    s = spans.setdefault((r[0], r[3]), [r[1], r[2]])
    s[0], s[1] = min(s[0], r[1]), max(s[1], r[2])
if not any(a[0] != b[0] and sa[0] < sb[1] and sb[0] < sa[1] for a, sa in spans.items() for b, sb in spans.items()):
    bad.append("no point on one GPU was measured while one on the other was")
slot_of = {}
for p in t["points"]:
    key = p["key"]
    mine = [r for r in runs if r[3] == key]
    if not mine:
        continue
    seen = {r[0] for r in mine}
    if len(seen) != 1 or p.get("gpu") not in seen:
        bad.append(f"{key}: its runs saw GPUs {sorted(seen)}, its record says {p.get('gpu')}")
    for r in mine:
        folder = r[5].rstrip("/").split("/")
        if r[4] == "variant" and folder[-1] != key:
            bad.append(f"{key}: a variant run in {r[5]}")
        if r[4] == "baseline":
            if len(folder) < 2 or not folder[-2].startswith("slot-") or folder[-1] != "baseline":
                bad.append(f"{key}: a baseline run in {r[5]}, not its GPU's copy")
            elif slot_of.setdefault(folder[-2], r[0]) != r[0]:
                bad.append(f"{folder[-2]} ran on GPUs {slot_of[folder[-2]]} and {r[0]}")
keys = [p["key"] for p in t["points"]]
if keys != [f"t{i}" for i in range(1, len(keys) + 1)]:
    bad.append(f"the points are recorded as {keys}")
def plan_points(x):
    if isinstance(x, dict):
        if isinstance(x.get("points"), list) and x.get("method") == "exhaustive":
            return [q.split("  [")[0] for q in x["points"]]
        for v in x.values():
            if (r := plan_points(v)) is not None:
                return r
    if isinstance(x, list):
        for v in x:
            if (r := plan_points(v)) is not None:
                return r
    return None
serial = plan_points(json.load(open(sys.argv[3])))
if serial is None or [p["point"] for p in t["points"]] != serial:
    bad.append(f"the points {[p['point'] for p in t['points']]} are not the serial search's {serial}")
if t.get("gpus") != ["0", "1"]:
    bad.append(f"tune.gpus is {t.get('gpus')}")
best = [p for p in t["points"] if p["key"] == t["best"]]
if not best or str(best[0]["values"]["CHUNK"]) != "256":
    bad.append(f"the best point is {best[0]['point'] if best else None}, not CHUNK 256")
left = [f for f in os.listdir(os.path.join(run, "work")) if f.startswith("slot-")] if os.path.isdir(os.path.join(run, "work")) else []
if left:
    bad.append(f"left in work/: {left}")
print("\n".join(bad))
print(f"{len(runs)} runs on GPUs {gpus}; points {[(p['key'], p.get('gpu'), p['status']) for p in t['points']]}")
sys.exit(1 if bad else 0)
PY
grep -q "and measuring on 2 GPUs at once saved" "$WORK/gpus.log" ||
  fail "the stage's closing line does not say two GPUs measured"$'\n'"$(grep 'point(s) in' "$WORK/gpus.log")"

# The watch level cannot keep one GPU's variant out of another's folders: one GPU measures.
rc=0
"$OPTIMAS" run --app "$WORK/lean" --runs-dir "$RUNS" --tune-only --runs 4 --no-cache --gpus 0,1 --sandbox watch \
  --tune-search exhaustive --tune-budget 2 --json > "$WORK/watch.json" 2> "$WORK/watch.log" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "watch: exit $rc"$'\n'"$(tail -30 "$WORK/watch.log")"
grep -q "one GPU measures at a time of the 2 found (0,1): at the watch level" "$WORK/watch.log" ||
  fail "watch: the run does not say why one GPU measures"$'\n'"$(grep tune "$WORK/watch.log" | head -5)"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tune"]; sys.exit("gpus" in t or any("gpu" in p for p in t["points"]))' \
  "$WORK/watch.json" || fail "watch: points recorded with a GPU"
echo "tune_gpus: ok"
