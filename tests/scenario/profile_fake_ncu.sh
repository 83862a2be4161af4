# The profiling agent end to end with a stand-in ncu: build, timing pass, hot kernels, heavy
# pass limited to them, exports, manifest, read-back; and failures that keep what was done.
source "$(dirname "$0")/lib.sh"

export FAKE_NCU_DATA="$WORK/pages" FAKE_NCU_LOG="$WORK/ncu.log"
# ncu's own timing pass; the kernel tracer's fallback to it is checked at the end.
export OPTIMAS_TRACER=none
fake_ncu_pages
# The timing pass's raw page: the same four launches with their durations only.
{
  echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"'
  echo '"","","","","","","","","","","","nsecond"'
  echo '"0","479","k","127.0.0.1","saxpy(int, float, const float *, float *)","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","62,368"'
  echo '"1","479","k","127.0.0.1","dloop(int, double *)","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","353,024"'
  echo '"2","479","k","127.0.0.1","saxpy(int, float, const float *, float *)","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","61,664"'
  echo '"3","479","k","127.0.0.1","dloop(int, double *)","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","352,960"'
} > "$FAKE_NCU_DATA/timing/raw.csv"

# A tiny application: the build makes ./app, which writes its --out file.
mkdir -p "$WORK/app"
cat > "$WORK/app/app.in" <<'APP'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do case $1 in --n) n=$2; shift 2;; --out) out=$2; shift 2;; --mode) mode=$2; shift 2;; *) shift;; esac; done
[ "${mode:-ok}" = crash ] && { echo "app: simulated crash" >&2; exit 3; }
[ "${mode:-ok}" = hang ] && exec sleep 600
echo "n=$n" > "$out"; echo "kernel_time_ms: 0.4"
APP
cat > "$WORK/app/optimas.yml" <<'YML'
name: tiny
sources: [app.in]
build: {command: "cp app.in app && chmod +x app", binary: app}
run: {command: "./app --n {n} --mode {mode} --out {output}", output: out.txt}
configs:
  - {name: small, n: 1, mode: ok}
  - {name: default, n: 2, mode: ok, default: true}
  - {name: crash, n: 3, mode: crash}
  - {name: hang, n: 4, mode: hang}
  - {name: secret, n: 5, mode: ok, held_out: true}
YML

P="$WORK/prof"
"$OPTIMAS" profile "$WORK/app" -i small -i default -o "$P" --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" --json \
  > "$WORK/profile.json" 2> "$WORK/progress.txt" || fail "profile failed: $(cat "$WORK/progress.txt")"
grep -q '\[1/5\] build' "$WORK/progress.txt" || fail "progress lines: $(cat "$WORK/progress.txt")"
grep -q 'hot kernels (80% of 0.830 ms): dloop' "$WORK/progress.txt" || fail "hot kernels line: $(cat "$WORK/progress.txt")"
[ -x "$WORK/app/app" ] || fail "the build command did not run"
# Only the hot kernel is asked for in the heavy pass, with the PC-sampling sections and LC_ALL=C exports.
# At most three launches of each hot kernel (--launch-cap 3), spread over the run; dloop has two,
# its first and second invocations, profiled in two rounds (docs/profiling-cost.md).
grep -q -- "--kernel-id ::regex:^(dloop)\$:^(1)\$ --import-source yes --clock-control none" "$FAKE_NCU_LOG" || fail "heavy pass: $(cat "$FAKE_NCU_LOG")"
grep -q -- "--kernel-id ::regex:^(dloop)\$:^(2)\$ --import-source yes --clock-control none" "$FAKE_NCU_LOG" || fail "round 2: $(cat "$FAKE_NCU_LOG")"
grep -q -- "--section SourceCounters --section WarpStateStats" "$FAKE_NCU_LOG" || fail "sections"
grep -q -- "--page source --print-source cuda,sass" "$FAKE_NCU_LOG" || fail "source export"
M="$P/manifest.json"
json_check "$M" 'd["ncu"]["version"] == "2025.3.1.0" and d["mode"] == "two-pass"'
json_check "$M" '[r["config"] for r in d["runs"]] == ["small", "default"]'
json_check "$M" 'all(len(i["sha256"]) == 64 for i in d["inputs"]) and {i["path"] for i in d["inputs"]} >= {"app.in", "app"}'
json_check "$M" 'd["runs"][1]["hot_kernels"] == ["dloop"] and "--n 2" in d["runs"][1]["command"]'
json_check "$M" 'all(set(r["pages"]) == {"timing_raw"} for r in d["runs"])'
json_check "$M" 'all([set(x["pages"]) for x in r["rounds"]] == [{"details", "raw", "source", "session"}] * 2 for r in d["runs"])'
json_check "$WORK/profile.json" 'len(d["runs"]) == 2 and len(d["launches"]) == 4 and len(d["timing"]) == 8 and len(d["sources"]) == 4'
[ ! -e "$P/small/program.out" ] || fail "the program's output should not stay in the profile"

# The directory imports back to the same model.
"$OPTIMAS" profile --import "$P" --json --all-metrics --instructions > "$WORK/import.json"
"$OPTIMAS" profile --import "$P" --json > "$WORK/import-brief.json"
python3 - "$WORK/profile.json" "$WORK/import-brief.json" <<'PY' || fail "import differs from the profile run's own output"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("runs", "launches", "timing", "sources"):
    assert a[k] == b[k], k
PY

# Held-out configurations are not profiled unless asked for.
"$OPTIMAS" profile "$WORK/app" --dry-run -o "$P" | grep -q secret && fail "held-out config in a default profile"

# A crashing program: a clear error with its log, and the runs already done stay in the manifest.
expect_fail 1 'crash: profiling failed|crash: the timing pass failed' -- \
  "$OPTIMAS" profile "$WORK/app" -i small -i crash -o "$WORK/prof2" --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu"
json_check "$WORK/prof2/manifest.json" '[r["config"] for r in d["runs"]] == ["small"]' "the finished run survives a later failure"
grep -q 'simulated crash' "$WORK/prof2/crash/timing.log" || fail "the program's stderr is kept in the log"

# A hanging program is killed at the time limit, with everything it started.
expect_fail 1 'timed out after' -- \
  "$OPTIMAS" profile "$WORK/app" -i hang -o "$WORK/prof3" --timeout 2 --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu"

# A hot kernel that ncu does not find under the name the timing pass gave it (session 24: a
# file-static kernel's symbol): ncu profiles nothing and writes no report; the error says so.
cp "$FAKE_NCU_DATA/timing/raw.csv" "$WORK/timing-raw.csv"
sed -i 's/dloop(int, double \*)/ghost(int, double *)/' "$FAKE_NCU_DATA/timing/raw.csv"
expect_fail 1 'default: ncu wrote no report in profiling round 1: no launch matched its kernel filter' -- \
  "$OPTIMAS" profile "$WORK/app" -i default -o "$WORK/prof-ghost" --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu"
grep -q 'No kernels were profiled' "$WORK/prof-ghost/default/ncu.r1.log" || fail "no ncu log kept for the empty round"
cp "$WORK/timing-raw.csv" "$FAKE_NCU_DATA/timing/raw.csv"

# An optional page whose export hangs (session 24: ncu stalled at the end of a source page) is
# stopped at its own limit (--timeout here, below the 30 s floor); the profile goes on without it.
FAKE_NCU_HANG_PAGE=source "$OPTIMAS" profile "$WORK/app" -i default -o "$WORK/prof-hang-page" --timeout 3 \
  --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" > /dev/null 2> "$WORK/hang-page.txt" ||
  fail "a hanging source export failed the profile: $(cat "$WORK/hang-page.txt")"
grep -q 'no source page (timed out after' "$WORK/hang-page.txt" || fail "no warning: $(cat "$WORK/hang-page.txt")"
json_check "$WORK/prof-hang-page/manifest.json" 'all(set(x["pages"]) == {"details", "raw", "session"} for x in d["runs"][0]["rounds"])'
# A page ncu cannot export: its error, printed on stdout as ncu prints it, is the warning's reason.
mv "$FAKE_NCU_DATA/heavy/session.csv" "$WORK/session.csv"
"$OPTIMAS" profile "$WORK/app" -i default -o "$WORK/prof-no-session" --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" \
  > /dev/null 2> "$WORK/no-session.txt" || fail "a missing session page failed the profile: $(cat "$WORK/no-session.txt")"
grep -q 'no session page (exit code 1: ==ERROR== no session page in this report)' "$WORK/no-session.txt" ||
  fail "the warning lacks ncu's reason: $(cat "$WORK/no-session.txt")"
mv "$WORK/session.csv" "$FAKE_NCU_DATA/heavy/session.csv"

# run.command means what it means in a shell, under the profiler as in every other run: the
# pipe and the `;` below reach /bin/sh, not the program as arguments.
cp -r "$WORK/app" "$WORK/shell-app"
sed -i 's|run: {command: "./app --n {n} --mode {mode} --out {output}"|run: {command: "./app --n {n} --mode {mode} --out {output} \| tee app.log; echo after >> app.log"|' \
  "$WORK/shell-app/optimas.yml"
grep -q "tee app.log" "$WORK/shell-app/optimas.yml" || fail "the shell command was not set"
: > "$FAKE_NCU_LOG"
"$OPTIMAS" profile "$WORK/shell-app" -i default -o "$WORK/prof-shell" --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" \
  > /dev/null 2> "$WORK/shell.txt" || fail "profile with shell syntax: $(cat "$WORK/shell.txt")"
[ "$(cat "$WORK/shell-app/app.log")" = "$(printf 'kernel_time_ms: 0.4\nafter')" ] ||
  fail "the run command did not go through a shell: app.log holds: $(cat "$WORK/shell-app/app.log" 2>&1)"
grep -q -- "--target-processes all .* /bin/sh -c " "$FAKE_NCU_LOG" || fail "ncu does not follow the shell's child: $(cat "$FAKE_NCU_LOG")"
# With a kernel tracer the timing pass is the program itself with the tracer injected (the dry
# run shows it); a program that leaves no trace (here: no CUDA at all) is timed by ncu instead,
# with a warning, and the profile is the same.
TRACER="$WORK/liboptimas-trace.so"
: > "$TRACER"
"$OPTIMAS" profile "$WORK/app" -i default -o "$WORK/prof-dry" --tracer "$TRACER" --dry-run > "$WORK/dry.txt" ||
  fail "dry run with a tracer"
grep -q "^default: env CUDA_INJECTION64_PATH=$TRACER OPTIMAS_TRACE_DIR=$WORK/prof-dry/default/trace ./app --n 2 " "$WORK/dry.txt" ||
  fail "the dry run does not show the traced command: $(cat "$WORK/dry.txt")"
grep -q -- "--kernel-id '::regex:^(HOT_KERNEL)" "$WORK/dry.txt" || fail "the dry run does not show the launch cap: $(cat "$WORK/dry.txt")"
"$OPTIMAS" profile "$WORK/app" -i default -o "$WORK/prof-fallback" --tracer "$TRACER" --json \
  --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu" > "$WORK/fallback.json" 2> "$WORK/fallback.txt" ||
  fail "profile with a tracer that writes nothing: $(cat "$WORK/fallback.txt")"
grep -q "the kernel tracer wrote no trace" "$WORK/fallback.txt" || fail "no warning: $(cat "$WORK/fallback.txt")"
grep -q '\[3/3\] default: roofline' "$WORK/fallback.txt" || fail "step count after the fallback: $(cat "$WORK/fallback.txt")"
json_check "$WORK/prof-fallback/manifest.json" 'd["timing"] == "trace" and "timing_raw" in d["runs"][0]["pages"]'
json_check "$WORK/fallback.json" 'len(d["timing"]) == 4 and len(d["launches"]) == 2'
expect_fail 2 'does not exist' -- "$OPTIMAS" profile "$WORK/app" -i default --tracer "$WORK/none.so" --dry-run

# A time budget: a hanging configuration is stopped when the budget is spent, and what was
# finished before stays in the manifest. On the profile's test clock, which only the fake's
# replays advance (none here), small spends nothing of the budget whatever the machine's load
# (on the wall clock, small alone once spent 3 s under the full suite's load); each of its
# passes has the 4 s of the wall clock that the hang is given.
echo 0 > "$WORK/clock"
expect_fail 1 'timed out after' -- env OPTIMAS_PROFILE_CLOCK="$WORK/clock" \
  "$OPTIMAS" profile "$WORK/app" -i small -i hang -o "$WORK/prof-budget" --budget 4 --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu"
json_check "$WORK/prof-budget/manifest.json" '[r["config"] for r in d["runs"]] == ["small"]' "the budget keeps finished runs"
# The default layout: `optimas profile` in the application's folder writes
# optimas-profile/<name>/, and analyze and prompt run there with no profile named read it.
(cd "$WORK/app" && "$OPTIMAS" profile . -i default --ncu "$OPTIMAS_SOURCE_DIR/tests/scenario/fake-ncu") \
  > /dev/null 2> "$WORK/default.txt" || fail "profile into optimas-profile/: $(cat "$WORK/default.txt")"
[ -f "$WORK/app/optimas-profile/tiny/manifest.json" ] || fail "no optimas-profile/tiny/manifest.json"
(cd "$WORK/app" && "$OPTIMAS" -q analyze --json) > "$WORK/default-analyze.json" || fail "analyze with the default profile folder"
json_check "$WORK/default-analyze.json" '[k["kernel"] for k in d["kernels"]] == ["dloop"]'
# Beside another application's profile, analyze asks which one.
cp -r "$WORK/app/optimas-profile/tiny" "$WORK/app/optimas-profile/other"
expect_fail 2 'optimas-profile holds the profiles of 2 applications; name one: optimas-profile/other, optimas-profile/tiny' -- \
  bash -c 'cd "$1/app" && "$2" analyze' _ "$WORK" "$OPTIMAS"
# prompt --app finds its own application's profile there (a recorded one: prompts need kernels).
mkdir -p "$WORK/st/optimas-profile"
cp -r "$OPTIMAS_SOURCE_DIR/examples/stream/." "$WORK/st/"
cp -r "$OPTIMAS_TEST_DATA/h200/stream" "$WORK/st/optimas-profile/stream"
(cd "$WORK/st" && "$OPTIMAS" -q prompt --app .) > "$WORK/prompt1.txt" 2>&1 || fail "prompt in the folder: $(cat "$WORK/prompt1.txt")"
grep -q 'triad' "$WORK/prompt1.txt" || fail "the prompt lacks stream's kernels: $(head -5 "$WORK/prompt1.txt")"
cp -r "$OPTIMAS_TEST_DATA/h200/sobol" "$WORK/st/optimas-profile/sobol"
(cd "$WORK/st" && "$OPTIMAS" -q prompt --app .) > "$WORK/prompt2.txt" 2>&1 || fail "prompt beside sobol's profile: $(cat "$WORK/prompt2.txt")"
cmp -s "$WORK/prompt1.txt" "$WORK/prompt2.txt" || fail "prompt --app read another application's profile"
# Only another application's profile there: an error, not that profile.
rm -rf "$WORK/st/optimas-profile/stream"
expect_fail 2 'optimas-profile holds no profile of stream \(it holds optimas-profile/sobol\)' -- \
  bash -c 'cd "$1/st" && "$2" prompt --app .' _ "$WORK" "$OPTIMAS"
pass "profiling agent with a stand-in ncu"
