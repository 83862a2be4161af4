# On a GPU (label "gpu"; skipped elsewhere): the README's commands verbatim, as a newcomer runs
# them. From a copy of the repository as a clone has it, in its root, with the defaults only:
# no --runs-dir (runs/ is relative), no --tracer, no --import; `optimas` is the binary setup.sh
# builds (build/src/optimas, with the kernel tracer beside it), on PATH. Each command is first
# checked to be in README.md as written here, so the README cannot drift from what is tested.
#   1. `optimas run --app examples/stream`: the main job. It profiles, edits, builds, validates
#      and measures by the kernel trace, then tunes. Checked: the run measured its variant by
#      the trace, and nothing failed. The tuning stage can outlast a device call: after
#      GPU_README_MAIN_S seconds (default 330) the run is interrupted as a user would (Ctrl-C)
#   2. `optimas run --resume <id>` continues it (GPU_README_RESUME_S, default 60, then Ctrl-C
#      again unless it finished), and `optimas runs list` / `optimas runs show <id>` show it.
#   GPU_README_OUT   folder that keeps the logs and run.json (default: a temporary one)
source "$(dirname "$0")/lib.sh"

command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU || skip "no NVIDIA GPU here"
command -v ncu >/dev/null || skip "ncu (Nsight Compute) not on PATH"
command -v nvcc >/dev/null || skip "nvcc not on PATH"

OUTDIR=${GPU_README_OUT:-$WORK/out}
mkdir -p "$OUTDIR"
README="$OPTIMAS_SOURCE_DIR/README.md"
# readme_has COMMAND: the README shows this command as written (at the start of a line of a block).
readme_has() { grep -qF -- "$1" "$README" || fail "README.md no longer shows \`$1\`; update this test with it"; }

# A copy of the repository as a clone has it: no build outputs, runs, profiles or device files.
CLONE="$WORK/optimas"
mkdir -p "$CLONE"
tar -C "$OPTIMAS_SOURCE_DIR" --exclude=./build --exclude='./build-*' --exclude=./runs --exclude=./optimas-profile \
  --exclude=./.device --exclude=./.git --exclude='./examples/*/stream' -cf - . | tar -C "$CLONE" -xf -
mkdir -p "$CLONE/build/src"
cp "$OPTIMAS" "$CLONE/build/src/optimas"
tracer="$(dirname "$OPTIMAS")/liboptimas-trace.so"
[ -f "$tracer" ] || tracer="$(dirname "$(readlink -f "$OPTIMAS")")/liboptimas-trace.so"
[ -f "$tracer" ] && cp "$tracer" "$CLONE/build/src/"
export PATH="$CLONE/build/src:$PATH"
cd "$CLONE"

# interrupt_after SECONDS COMMAND...: the command, stopped with SIGINT (a user's Ctrl-C) if it
# is still running after SECONDS; sets rc (130 when it was interrupted).
interrupt_after() {
  local limit=$1
  shift
  rc=0
  timeout --signal=INT --kill-after=60 "$limit" "$@" || rc=$?
  [ "$rc" -eq 124 ] && rc=130
  return 0
}

MAIN="optimas run --app examples/stream"
readme_has "$MAIN"
echo "== $MAIN (at most ${GPU_README_MAIN_S:-330} s)"
start=$(date +%s)
interrupt_after "${GPU_README_MAIN_S:-330}" $MAIN > "$OUTDIR/main.out" 2> "$OUTDIR/main.log"
echo "exit $rc after $(( $(date +%s) - start )) s"
[ -d runs ] || fail "the main job wrote no runs/ in the repository root: $(tail -20 "$OUTDIR/main.log")"
id=$(ls runs | grep -E '^[0-9a-f-]{36}$' | head -1)
[ -n "$id" ] || fail "no run folder in runs/: $(tail -20 "$OUTDIR/main.log")"
cp "runs/$id/run.json" "$OUTDIR/run-main.json"
grep -q "optimas-trace: cannot write" "$OUTDIR/main.log" "runs/$id" -r 2>/dev/null &&
  fail "the tracer could not write its trace (a relative trace folder?): $(grep -rh 'optimas-trace: cannot write' runs/$id | head -3)"
case $rc in
  0 | 3 | 130) ;;
  *) fail "the main job failed (exit $rc): $(tail -20 "$OUTDIR/main.log")" ;;
esac
json_check "runs/$id/run.json" 'd["execute"] and d["status"] != "failed"' "the main job failed: $(tail -20 "$OUTDIR/main.log")"
# Its edit step measured a variant against the baseline by the kernel trace: each timed sample
# journaled (measurements.jsonl, written as they are taken) has its traced launches and time.
cat runs/"$id"/iterations/*/attempt-*/measurements.jsonl > "$OUTDIR/measurements.jsonl" 2>/dev/null ||
  fail "the main job measured nothing in ${GPU_README_MAIN_S:-330} s: $(tail -20 "$OUTDIR/main.log")"
python3 - "$OUTDIR/measurements.jsonl" <<'PY' || fail "the samples were not timed by the kernel trace: $(tail -5 "$OUTDIR/measurements.jsonl")"
import json, sys
samples = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
timed = [s for s in samples if s.get("round", -1) >= 0]
roles = {s["role"] for s in timed}
assert {"baseline", "variant"} <= roles, roles
assert all(s.get("launches", 0) > 0 and s.get("kernel_ms", 0) > 0 for s in timed), timed[:2]
print(f"{len(timed)} timed samples, all traced")
PY

RESUME="optimas run --resume"
readme_has "$RESUME 3f2a"
if [ "$rc" -eq 130 ]; then
  echo "== $RESUME ${id:0:8} (at most ${GPU_README_RESUME_S:-60} s)"
  interrupt_after "${GPU_README_RESUME_S:-60}" $RESUME "${id:0:8}" > "$OUTDIR/resume.out" 2> "$OUTDIR/resume.log"
  echo "exit $rc"
  case $rc in
    0 | 3 | 130) ;;
    *) fail "resuming failed (exit $rc): $(tail -20 "$OUTDIR/resume.log")" ;;
  esac
  grep -q "resume" "$OUTDIR/resume.log" || fail "the resumed run does not say it resumed: $(head "$OUTDIR/resume.log")"
  cp "runs/$id/run.json" "$OUTDIR/run-resumed.json"
fi

readme_has "optimas runs list"
optimas runs list > "$OUTDIR/runs-list.txt" || fail "optimas runs list failed"
grep -q "${id:0:8}" "$OUTDIR/runs-list.txt" || fail "runs list does not show $id: $(cat "$OUTDIR/runs-list.txt")"
optimas runs show "$id" > "$OUTDIR/runs-show.txt" || fail "optimas runs show $id failed"
pass "the README's main job ran from the repository root with its defaults (run $id)"
