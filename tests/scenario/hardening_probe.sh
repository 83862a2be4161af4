# Issue #52's probe, one case per finding as the issue numbers them (no GPU): each bad input or
# hostile file gets a clear error naming the file, line or flag (exit 2) and leaves nothing
# behind, or is refused without harm. Cases of findings covered elsewhere name their test:
#   1  children.json naming group 1: Sandbox.EndChildNeverSignalsGroupOne (in a PID namespace of
#      its own); naming another run's or an unrelated process: Sandbox.RecordedChildrenMustCarryTheRunsMark
#      and the resume case below
#   4  --base-url file:// : HttpPost.OnlyHttpAndHttpsAreSpoken
#   5  the dashboard and another site's Host: scenario.serve, ServeHost.OnlyThisServersNamesAreAnswered
# Not yet here (issue #52 open): 2 (a sandbox for variants), 3 (run files as inputs), the rest of
# 6 and 7, and 8 (the suite under load).
source "$(dirname "$0")/lib.sh"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app"
cp -r "$APP" "$WORK/app"
cd "$WORK"

# --- 1: a resumed run does not end a process its record names but the run did not start ------
rc=0
"$OPTIMAS" run --app app --runs-dir runs --import "$OPTIMAS_TEST_DATA/h200/stream" --no-tune > first.log 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "the first run: exit $rc, expected 3 (no edit, no improvement)"$'\n'"$(tail -20 first.log)"
id=$(ls runs | grep -v '\.' | head -1)
[ -n "$id" ] || fail "no run folder"
sleep 1213 &
bystander=$!
trap 'kill "$bystander" 2>/dev/null || true; rm -rf "$WORK"' EXIT
start=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' "/proc/$bystander/stat")
python3 - "runs/$id" "$bystander" "$start" <<'PY'
import json, sys, os
d, pid, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
boot = open("/proc/sys/kernel/random/boot_id").read().strip()
json.dump({"owner": {"pid": 0, "start": 0}, "boot_id": boot,
           "children": [{"supervisor": pid, "supervisor_start": start, "group": pid, "group_start": start}]},
          open(os.path.join(d, "children.json"), "w"))
r = json.load(open(os.path.join(d, "run.json")))
r["status"] = "running"  # as a killed run leaves it
r["pid"] = 0
json.dump(r, open(os.path.join(d, "run.json"), "w"))
PY
"$OPTIMAS" run --resume "$id" --runs-dir runs > resume.log 2>&1 || true
kill -0 "$bystander" 2>/dev/null || fail "1: the resumed run ended a process it did not start"$'\n'"$(cat resume.log)"
grep -q "does not carry the run's mark" resume.log || fail "1: the refused record is not reported"$'\n'"$(cat resume.log)"
kill "$bystander" || true

# --- 6: clear errors, exit 2, nothing left behind --------------------------------------------
mkdir -p dir-yml/optimas.yml fifo-yml
expect_fail 2 'dir-yml/optimas.yml: is a folder, not a file' -- "$OPTIMAS" run --app dir-yml --dry-run
mkfifo fifo-yml/optimas.yml
expect_fail 2 'fifo-yml/optimas.yml: is not a regular file' -- timeout 10 "$OPTIMAS" run --app fifo-yml --dry-run

# corpus export -o A_FOLDER: refused, and no A_FOLDER.tmp left beside it
mkdir -p corpus-dir
expect_fail 2 '-o corpus-dir: is a folder; name the file to write' -- \
  "$OPTIMAS" corpus export --runs-dir runs -o corpus-dir
[ ! -e corpus-dir.tmp ] || fail "6: corpus export left corpus-dir.tmp"

# NaN and infinity are named as given, not as JSON's null
expect_fail 2 'min_speedup.*got nan' -- "$OPTIMAS" run --app app --min-speedup nan --dry-run
cp -r app nan && sed -i 's/^measure:/measure:\n  min_speedup: .inf/' nan/optimas.yml
expect_fail 2 'nan/optimas.yml:[0-9]+: measure.min_speedup .*got inf' -- "$OPTIMAS" run --app nan --dry-run

# --- 7: what was silently accepted is refused, naming the flag or the line -------------------
expect_fail 2 '--app and --config' -- "$OPTIMAS" run --app app --config app/optimas.yml --dry-run
expect_fail 2 '--resume continues a run with the application it recorded' -- \
  "$OPTIMAS" run --resume "$id" --runs-dir runs --app app --dry-run
for flag in "--rounds 2" "--candidates 2"; do
  # shellcheck disable=SC2086
  expect_fail 2 "--aa measures the unchanged program once.*leave ${flag%% *} out" -- \
    "$OPTIMAS" run --app app --aa $flag --dry-run
done
cp -r app hex && sed -i 's/^measure:/measure:\n  runs: 0x10/' hex/optimas.yml
expect_fail 2 'hex/optimas.yml:[0-9]+: "runs" must be a whole number in decimal, not "0x10"' -- \
  "$OPTIMAS" run --app hex --dry-run
cp -r app empty && sed -i 's/^sources: \[main.cu\]/sources: []/' empty/optimas.yml
expect_fail 2 'empty/optimas.yml:[0-9]+: "sources" is empty' -- "$OPTIMAS" run --app empty --dry-run
cp -r app twice && printf -- '---\nname: other\n' >> twice/optimas.yml
expect_fail 2 'twice/optimas.yml:[0-9]+: a second YAML document' -- "$OPTIMAS" run --app twice --dry-run
expect_fail 2 '-i nosuch: .* has no such configuration \(it has small, default, heldout\)' -- \
  "$OPTIMAS" profile --app app -i nosuch --dry-run
expect_fail 2 '"openai" names no model: give openai/MODEL' -- "$OPTIMAS" run --app app -m openai --dry-run
expect_fail 2 '--runs-dir .*typo: no such folder' -- "$OPTIMAS" runs list --runs-dir "$WORK/typo"
[ ! -e "$WORK/typo" ] || fail "7: runs list created the folder it was given"
pass "hardening probe: findings 1, 6 (a folder, a FIFO as optimas.yml; corpus export into a folder; NaN and inf named as given) and 7 (conflicting flags, 0x10, sources: [], a second document, -i nosuch, a model without its name, runs list on a typo)"
