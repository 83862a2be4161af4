# Issue #52's probe, one case per finding as the issue numbers them (no GPU): each bad input or
# hostile file gets a clear error naming the file, line or flag (exit 2) and leaves nothing
# behind, or is refused without harm. Cases of findings covered elsewhere name their test:
#   1  children.json naming group 1: Sandbox.EndChildNeverSignalsGroupOne (in a PID namespace of
#      its own); naming another run's or an unrelated process: Sandbox.RecordedChildrenMustCarryTheRunsMark
#      and the resume case below
#   4  --base-url file:// : HttpPost.OnlyHttpAndHttpsAreSpoken
#   5  the dashboard and another site's Host: scenario.serve, ServeHost.OnlyThisServersNamesAreAnswered
#   3  run files as inputs: also RunInputs.* (store/run_inputs.cpp) and ApplyRun.RunFilesThatLeadElsewhereAreRefused
#   2  a variant's code writing the application folder, $HOME, /tmp, or connecting: scenario.sandbox
#      (each level the machine allows) and Isolation.*
#   6  a library's words: Error.PlainMessagesOfLibraries, and the wrong-shape run.json below
#   7  a reply edit naming a kernel no source defines: Guardrails.AnEditMustNameAKernelTheSourcesDefine
#   8  the suite under load: no case here; scripts/test.sh run beside a CPU-bound job (two nvcc
#      builds at a time), README "The test suite" says when and what it measured
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

# --- 3: run files are inputs: what run.json names stays in the run folder or is the recorded ---
# application, no link leads out of the folder, and the snapshot is as snapshot.json recorded.
# Each case edits a copy of the first run (in a store of its own): refused with exit 2 naming the
# run and the file or field, run.json unchanged, nothing written outside.
cp -r app app-apply
run3() { # run3 PYTHON: a fresh copy of the first run in runs-3, resumable and with an accepted
  # variant whose main.cu is "// applied", made from app-apply; PYTHON edits its run.json `r`.
  rm -rf runs-3 && mkdir runs-3 && cp -r "runs/$id" runs-3/
  mkdir -p "runs-3/$id/iterations/1/attempt-1/src" && echo "// applied" > "runs-3/$id/iterations/1/attempt-1/src/main.cu"
  python3 - "runs-3/$id/run.json" "$WORK" "$1" <<'PY'
import json, sys
path, work = sys.argv[1], sys.argv[2]
r = json.load(open(path))
r["status"], r["pid"] = "running", 0  # as a killed run leaves it
r["config_path"] = work + "/app-apply/optimas.yml"
v = r["variants"][0]
v["status"], r["best"] = "accepted", v["key"]
v["source"] = v["dir"] + "/src"
exec(sys.argv[3])
json.dump(r, open(path, "w"))
PY
  sha256sum "runs-3/$id/run.json" > run3.sum
}
untouched3() { # untouched3 CASE: run.json as it was, app-apply's main.cu and outside/ too
  sha256sum -c --quiet run3.sum || fail "3, $1: run.json changed"
  cmp -s app/main.cu app-apply/main.cu || fail "3, $1: app-apply/main.cu was written"
  [ -z "$(ls -A outside)" ] || fail "3, $1: something was written outside the store: $(ls -A outside)"
}
mkdir -p outside victim
apply_with_config_path_elsewhere() {
  cp app/main.cu victim/ && sed 's/^name: stream/name: victim/' app/optimas.yml > victim/optimas.yml
  run3 'r["config_path"] = work + "/victim/optimas.yml"'
  expect_fail 2 "run $id: .*victim/optimas.yml changed since run $id started, or run.json's config_path was edited" -- \
    "$OPTIMAS" apply "$id" --runs-dir runs-3
  cmp -s app/main.cu victim/main.cu || fail "3: apply wrote into the folder an edited config_path named"
  untouched3 "config_path elsewhere"
}
apply_with_an_absolute_source() {
  mkdir -p planted && echo "// planted" > planted/main.cu
  run3 'r["variants"][0]["source"] = work + "/planted"'
  expect_fail 2 "run $id: run.json's variants\[0\]\.source \".*/planted\" leads out of .*runs-3/$id" -- \
    "$OPTIMAS" apply "$id" --runs-dir runs-3
  untouched3 "an absolute source"
}
apply_with_an_edited_snapshot() {
  run3 ''
  echo "// edited" >> "runs-3/$id/snapshot/main.cu"
  expect_fail 2 "run $id: .*runs-3/$id/snapshot/main.cu is not as the run recorded it" -- \
    "$OPTIMAS" apply "$id" --runs-dir runs-3
  untouched3 "apply, an edited snapshot"
}
resume_with_work_linked_out() {
  run3 ''
  ln -s "$WORK/outside" "runs-3/$id/work"
  expect_fail 2 "run $id: .*runs-3/$id/work is a symbolic link to .*/outside, outside the run folder" -- \
    "$OPTIMAS" run --resume "$id" --runs-dir runs-3
  untouched3 "work/ linked out"
}
resume_with_iterations_linked_out() {
  run3 ''
  mv "runs-3/$id/iterations" outside/ && ln -s "$WORK/outside/iterations" "runs-3/$id/iterations"
  expect_fail 2 "run $id: .*runs-3/$id/iterations is a symbolic link to .*/outside/iterations, outside the run folder" -- \
    "$OPTIMAS" run --resume "$id" --runs-dir runs-3
  rm -rf outside/iterations
  untouched3 "iterations/ linked out"
}
resume_with_an_edited_snapshot() {
  run3 ''
  echo "// edited" >> "runs-3/$id/snapshot/main.cu"
  expect_fail 2 "run $id: .*runs-3/$id/snapshot/main.cu is not as the run recorded it" -- \
    "$OPTIMAS" run --resume "$id" --runs-dir runs-3
  untouched3 "resume, an edited snapshot"
}
apply_of_the_untouched_copy_works() { # the control: the refusals above are the edits' doing
  run3 ''
  "$OPTIMAS" apply "$id" --runs-dir runs-3 > apply3.log 2>&1 || fail "3: apply of the untouched run: $(cat apply3.log)"
  grep -qx "// applied" app-apply/main.cu || fail "3: apply of the untouched run did not write main.cu"
}
apply_with_config_path_elsewhere
apply_with_an_absolute_source
apply_with_an_edited_snapshot
resume_with_work_linked_out
resume_with_iterations_linked_out
resume_with_an_edited_snapshot
apply_of_the_untouched_copy_works

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
# A run.json of the wrong shape read deep inside (a field of another kind): what is said names
# no library ("[json.exception...]", "basic_filebuf", "filesystem error").
rm -rf runs-6 && mkdir runs-6 && cp -r "runs/$id" runs-6/
python3 - "runs-6/$id/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["variants"][0]["key"] = 12
r["started"] = ["not", "a", "time"]
json.dump(r, open(sys.argv[1], "w"))
PY
for cmd in "runs show $id" "runs list" "corpus export"; do
  # shellcheck disable=SC2086
  "$OPTIMAS" $cmd --runs-dir runs-6 > wrong-shape.out 2>&1 || true
  ! grep -E 'json\.exception|basic_filebuf|filesystem error|internal error' wrong-shape.out ||
    fail "6: $cmd on a run.json of the wrong shape speaks a library's words: $(cat wrong-shape.out)"
done

# --- 7: a run dropped from corpus export says so ---------------------------------------------
rm -rf runs-7 && mkdir runs-7 && cp -r "runs/$id" runs-7/ && cp -r "runs/$id" "runs-7/${id%????}beef"
rm "runs-7/${id%????}beef/run.json"
"$OPTIMAS" corpus export --runs-dir runs-7 -o runs-7.jsonl 2> corpus-7.log || fail "7: corpus export: $(cat corpus-7.log)"
grep -q "${id%????}beef.*left out of the corpus" corpus-7.log ||
  fail "7: corpus export dropped a run folder without a word: $(cat corpus-7.log)"
pass "hardening probe: findings 1, 3 (apply with config_path elsewhere, an absolute source, an edited snapshot; resume with work/ or iterations/ linked out, an edited snapshot), 6 (a folder, a FIFO as optimas.yml; corpus export into a folder; NaN and inf named as given) and 7 (conflicting flags, 0x10, sources: [], a second document, -i nosuch, a model without its name, runs list on a typo, a run folder without run.json left out of the corpus with a word); 6: a run.json of the wrong shape in our words"
