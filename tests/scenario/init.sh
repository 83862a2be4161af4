# optimas init on projects of ours as a new user runs it (in the folder, relative paths, the
# program's command after --), without a GPU: the host stand-ins run here (--cpu).
#   - make-app (a Makefile, objects, a per-call average in us): the written file loads, times
#     per call over {calls}, compares the --out file; then `optimas run` on it, unedited, reaches
#     a verdict (the profile imported from the H200 recording of the stream example);
#   - cmake-app (CMake out of tree, positional arguments, the output named by position, a
#     wall-clock line): build/, {output} found from the file the runs wrote, the line ignored;
#   - a program whose stdout carries a random number: reported as not deterministic;
#   - an existing optimas.yml is left alone without --force; a folder with nothing to build, and
#     a run that fails, say why.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-ins are built with g++"
command -v make >/dev/null || skip "the stand-ins are built with make"
command -v cmake >/dev/null || skip "cmake-app is built with cmake"

cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/make-app" "$WORK/make-app"
rm "$WORK/make-app/optimas.yml"
(cd "$WORK/make-app" && "$OPTIMAS" init --cpu --json -- ./stream --n 131072 --calls 50 --seed 11 --out stream.out \
  > "$WORK/make.json") || fail "init on make-app: $(cat "$WORK/make.json")"
Y="$WORK/make-app/optimas.yml"
cat "$Y"
json_check "$WORK/make.json" 'd["built"] and d["runs"] == 3 and d["dry_run"]["ok"]' "built, ran 3 times, loads"
json_check "$WORK/make.json" 'd["build"]["command"] == "make" and d["build"]["clean"] == "make clean" and d["build"]["binary"] == "stream"'
json_check "$WORK/make.json" 'sorted(d["sources"]) == ["dot_kernels.cu", "stream_kernels.cu"]'
json_check "$WORK/make.json" 'd["run"]["command"] == "./stream --n {n} --calls {calls} --seed {seed} --out {output}"'
json_check "$WORK/make.json" \
  'd["kernel_time"] == {"pattern": r"Average triad time \(us\): ([0-9.eE+-]+)", "unit": "us", "per": "call", "calls": "{calls}"}'
json_check "$WORK/make.json" 'any("same bytes in all 3 runs" in f for f in d["findings"])' "exact validation"
grep -q '^  needs_gpu: false' "$Y" || fail "--cpu did not write needs_gpu: false"
grep -q '^  # - {name: heldout, n: 98304, calls: 50, seed: 1234, held_out: true}' "$Y" || fail "no held-out suggestion"
# The file as written, unedited, carries a first run to its verdict.
rc=0
(cd "$WORK/make-app" && "$OPTIMAS" run --app . --import "$OPTIMAS_TEST_DATA/h200/stream" --json > "$WORK/run.json" \
  2> "$WORK/run.log") || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$WORK/run.log"; fail "optimas run on init's file: exit $rc"; }
json_check "$WORK/run.json" 'd["status"] == "finished" and len(d["variants"]) >= 1' "a verdict on init's file"

cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/cmake-app" "$WORK/cmake-app"
(cd "$WORK/cmake-app" && "$OPTIMAS" init --cpu --json -- ./build/smooth 65536 20 smooth.out > "$WORK/cmake.json") \
  || fail "init on cmake-app: $(cat "$WORK/cmake.json")"
cat "$WORK/cmake-app/optimas.yml"
json_check "$WORK/cmake.json" 'd["build"]["dir"] == "build" and d["build"]["binary"] == "build/smooth" and d["build"]["command"].startswith("cmake -S . -B build")'
json_check "$WORK/cmake.json" 'd["sources"] == ["kernels.cu"] and d["run"]["command"] == "./build/smooth {arg1} {arg2} {output}"' \
  "the output named by position became {output}"
json_check "$WORK/cmake.json" 'd["kernel_time"]["pattern"] == "Kernel time = ([0-9.eE+-]+) ms" and d["kernel_time"]["per"] == "run"'
json_check "$WORK/cmake.json" 'd["ignore"] == [r"^Elapsed: *[-+0-9.eE]+ s"]' "the wall-clock line is ignored"
[ ! -e "$WORK/cmake-app/build" ] || fail "init built in the user's folder"

# Stdout that carries a random number: likely a result, so not ignored (ignoring it would let a
# variant that computes something else pass); reported, and written as a TODO.
mkdir "$WORK/noisy"
printf 'all:\n\tcp noisy.sh noisy && chmod +x noisy\n' > "$WORK/noisy/Makefile"
printf '#!/bin/sh\necho "answer 42"\necho "draw $(od -An -N4 -tu4 /dev/urandom)"\n' > "$WORK/noisy/noisy.sh"
(cd "$WORK/noisy" && "$OPTIMAS" init --cpu --json -- ./noisy > "$WORK/noisy.json") || fail "init on noisy"
json_check "$WORK/noisy.json" 'd["ignore"] == [] and d["ignore_todo"] == ["^draw *[-+0-9.eE]+"]' "the varying line is not ignored"
json_check "$WORK/noisy.json" 'any("not the same every run" in f and "draw" in f and "not ignored" in f for f in d["findings"])' "non-determinism reported"
json_check "$WORK/noisy.json" 'any("seeded from the clock" in t for t in d["todo"])' "the TODO says what to do"
grep -q "^# validate:$" "$WORK/noisy/optimas.yml" && grep -q "^    # - '^draw" "$WORK/noisy/optimas.yml" ||
  fail "the line is written as a comment to uncomment:"$'\n'"$(cat "$WORK/noisy/optimas.yml")"
"$OPTIMAS" run --app "$WORK/noisy" --dry-run > /dev/null || fail "the file with the commented block does not load"
# Beside a varying rate, which is ignored: the block is live, the result line a comment in it.
mkdir "$WORK/noisy2"
printf 'all:\n\tcp noisy.sh noisy && chmod +x noisy\n' > "$WORK/noisy2/Makefile"
printf '#!/bin/sh\necho "answer 42"\necho "bandwidth $(od -An -N2 -tu2 /dev/urandom) GB/s"\necho "draw $(od -An -N4 -tu4 /dev/urandom)"\n' \
  > "$WORK/noisy2/noisy.sh"
(cd "$WORK/noisy2" && "$OPTIMAS" init --cpu --json -- ./noisy > "$WORK/noisy2.json") || fail "init on noisy2"
json_check "$WORK/noisy2.json" 'd["ignore"] == [r"^bandwidth *[-+0-9.eE]+ GB\/s"] and d["ignore_todo"] == ["^draw *[-+0-9.eE]+"]' "noisy2: one ignored, one left"
grep -q "^validate:$" "$WORK/noisy2/optimas.yml" && grep -q "^    - '^bandwidth" "$WORK/noisy2/optimas.yml" &&
  grep -q "^    # - '^draw" "$WORK/noisy2/optimas.yml" || fail "noisy2: the block:"$'\n'"$(cat "$WORK/noisy2/optimas.yml")"
"$OPTIMAS" run --app "$WORK/noisy2" --dry-run > /dev/null || fail "noisy2: the file does not load"

# An existing file is the user's: left as it is without --force.
echo "# mine" > "$WORK/noisy/optimas.yml"
expect_fail 1 "exists; init leaves it" -- bash -c "cd '$WORK/noisy' && '$OPTIMAS' init --cpu -- ./noisy"
[ "$(cat "$WORK/noisy/optimas.yml")" = "# mine" ] || fail "init overwrote optimas.yml"
(cd "$WORK/noisy" && "$OPTIMAS" init --cpu --force -- ./noisy > /dev/null) || fail "--force"
grep -q '^name: noisy' "$WORK/noisy/optimas.yml" || fail "--force did not replace the file"

# Nothing to build; a run that fails.
mkdir "$WORK/empty"
expect_fail 1 "no Makefile, CMakeLists.txt or .cu file" -- "$OPTIMAS" init "$WORK/empty"
sed -i 's/^echo "answer 42"$/[ "$1" = --no-such-flag ] \&\& { echo "unknown flag" >\&2; exit 3; }/' "$WORK/noisy/noisy.sh"
(cd "$WORK/noisy" && "$OPTIMAS" init --cpu --force --json -- ./noisy --no-such-flag > "$WORK/fails.json") \
  || fail "a failing run is a finding, not an error"
json_check "$WORK/fails.json" 'any("run 1 failed: exit code 3: unknown flag" in f for f in d["findings"]) and d["dry_run"]["ok"]'
pass "init"
