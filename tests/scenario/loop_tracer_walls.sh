# The kernel tracer behind the sandbox's walls: on a GPU machine (session 32, an H100) every traced
# run behind the unshare walls left no trace while the program ran, and the default run stopped
# at its first measured round. The stand-in writes the trace a traced CUDA program would where it
# can read the tracer (a file under /tmp here, which the walls' private /tmp hides), and for the
# rest of the cases only where the root file system is writable, i.e. without walls (a CUPTI that
# refuses to work behind them, one cause the H100's could have). The run checks the tracer once, after the baseline's runs
# (Loop::check_tracer), and then:
#   --timing auto (the default; the stand-in says needs_gpu): the walls stay, runs are timed by
#     the time the program prints, and a warning says why;
#   --timing trace with --sandbox auto: the run goes on at the watch level, timed by trace;
#   --timing trace with the walls asked for by name: exit 2, saying what to pass;
#   a tracer that writes nothing even without walls, with --timing trace: exit 2.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
: > "$WORK/fake-liboptimas-trace.so"

# app NAME WHERE: the stand-in, whose runs write a trace of 4 launches of triad_kernel (2 ms each)
# and an untraced helper's launch where they can read the tracer (CUDA_INJECTION64_PATH) and
# WHERE is "loaded" (anywhere), "bare" (only without walls) or "never".
app() {
  cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/$1"
  cat > "$WORK/$1/run.sh" <<SH
#!/bin/sh
walls=no
awk '\$5 == "/" && \$6 ~ /^ro/ { found = 1 } END { exit !found }' /proc/self/mountinfo && walls=yes
# CUDA loads the tracer from its path, and goes on without it, silently, where it cannot.
[ -r "\$CUDA_INJECTION64_PATH" ] || walls=hidden
if [ -n "\$OPTIMAS_TRACE_DIR" ] && [ "\$walls" != hidden ] && { [ "$2" = loaded ] || [ "$2:\$walls" = bare:no ]; }; then
  t="\$OPTIMAS_TRACE_DIR/trace-\$\$.tsv"
  printf '# optimas-trace 1\nP\t%s\t0\nK\t1\t_Z1kv\ttriad_kernel()\nK\t2\t_Z6helperv\thelper()\n' "\$\$" > "\$t" || exit 1
  for i in 1 2 3 4; do
    printf 'L\t1\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t%s\t%s\n' \$((i * 10000000)) \$((i * 10000000 + 2000000)) >> "\$t"
  done
  printf 'L\t2\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t90000000\t91000000\nE\t5\t0\n' >> "\$t"
fi
exec ./stream "\$@"
SH
  chmod +x "$WORK/$1/run.sh"
  sed -i -e 's|^  command: ./stream --n {n} --reps {reps} --seed {seed} --out {output}$|  command: ./run.sh --n {n} --reps {reps} --seed {seed} --out {output}|' \
    -e 's|^  needs_gpu: false$|  needs_gpu: true|' "$WORK/$1/optimas.yml"
  grep -q 'command: ./run.sh' "$WORK/$1/optimas.yml" && grep -q 'needs_gpu: true' "$WORK/$1/optimas.yml" ||
    fail "the stand-in's optimas.yml was not changed"
}

# run NAME APP ARGS...: an A/A run of the stand-in (no GPU here: --execute yes); sets rc, dir (the
# run folder, where there is one) and log.
run() {
  local name=$1 app=$2
  shift 2
  rc=0
  "$OPTIMAS" run --app "$WORK/$app" --runs-dir "$WORK/runs-$name" --import "$D" --execute yes \
    --tracer "$WORK/fake-liboptimas-trace.so" --aa --runs 3 --warmup 0 --no-tune "$@" \
    > "$WORK/$name.out" 2> "$WORK/$name.log" || rc=$?
  log="$WORK/$name.log"
  dir=$(ls -d "$WORK/runs-$name"/*-*-*-*-*/ 2>/dev/null | head -1)
}

app bare bare
app never never
app loaded loaded

# The tracer under /tmp (here $WORK), which the walls' private /tmp hides unless the run binds it
# back (the stand-in tracer of every traced loop test lies there; before, those stand-ins never
# looked for it): behind each level this machine allows, the check passes and the runs are traced.
for level in bwrap unshare; do
  run "loaded-$level" loaded --timing trace --sandbox "$level"
  if grep -q "this machine does not allow it" "$log"; then
    echo "SKIP: --sandbox $level: not allowed here"
    continue
  fi
  [ "$rc" -eq 3 ] || fail "loaded-$level: exit $rc, not 3: $(tail -20 "$log")"
  json_check "$dir/baseline/baseline.json" 'd["tracer_check"]["outcome"] == "traced"' \
    "loaded-$level: the tracer under /tmp did not trace behind the walls: $(cat "$dir/baseline/baseline.json")"
  m=$(ls "$dir"/iterations/1/attempt-*/measurement.json | head -1)
  json_check "$m" 'all(s["launches"] == 5 for s in d["configs"]["default"]["base"] + d["configs"]["default"]["variant"])' \
    "loaded-$level: the runs were not timed by their trace: $(cat "$m")"
  json_check "$dir/run.json" 'd["sandbox"]["level"] == "'"$level"'"' "loaded-$level: the walls were lowered"
done

# --timing auto, --sandbox auto: where this machine allows no walls, the check passes and there
# is nothing more to test here.
run auto bare
[ -n "$dir" ] || fail "auto: no run folder (exit $rc): $(tail -20 "$log")"
level=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox"]["level"])' "$dir/run.json")
if [ "$level" = watch ]; then
  json_check "$dir/baseline/baseline.json" 'd["tracer_check"]["outcome"] == "traced"' \
    "without walls the tracer check did not pass: $(cat "$dir/baseline/baseline.json")"
  skip "this machine allows no sandbox walls (bwrap, unshare): the tracer works at the watch level"
fi
[ "$rc" -eq 3 ] || fail "auto: exit $rc, not 3 (an A/A run without a gain): $(tail -20 "$log")"
# The check runs the configuration quickest by the baseline's wall times (small, unless load
# reorders them: once, beside other tests, heldout's run was the quicker).
json_check "$dir/baseline/baseline.json" 'd["tracer_check"]["outcome"] == "untraced" and d["tracer_check"]["config"] == min(d["configs"], key=lambda c: d["configs"][c].get("wall_s", float("inf")))' \
  "auto: the tracer check did not drop the tracer: $(cat "$dir/baseline/baseline.json")"
json_check "$dir/run.json" 'd["sandbox"]["level"] != "watch" and any("writes no trace behind the" in w and "the walls stay" in w for w in d["warnings"])' \
  "auto: the walls were lowered, or no warning says why: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["sandbox"], d["warnings"])' "$dir/run.json")"
grep -q "warning: the kernel tracer writes no trace behind the" "$log" || fail "auto: the progress does not warn: $(cat "$log")"
m=$(ls "$dir"/iterations/1/attempt-*/measurement.json | head -1)
json_check "$m" 'all("launches" not in s and s.get("kernel_ms", 0) > 0 for s in d["configs"]["default"]["base"] + d["configs"]["default"]["variant"])' \
  "auto: the runs were not timed by the printed time: $(cat "$m")"

# --timing trace, --sandbox auto: the walls go, the trace comes.
run trace bare --timing trace
[ "$rc" -eq 3 ] || fail "trace: exit $rc, not 3: $(tail -20 "$log")"
json_check "$dir/baseline/baseline.json" 'd["tracer_check"]["outcome"] == "watch"' \
  "trace: the tracer check did not lower the walls: $(cat "$dir/baseline/baseline.json")"
json_check "$dir/run.json" 'd["sandbox"]["level"] == "watch" and any("--timing trace asks for it" in w for w in d["warnings"])' \
  "trace: run.json does not say the watch level and why: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["sandbox"], d["warnings"])' "$dir/run.json")"
m=$(ls "$dir"/iterations/1/attempt-*/measurement.json | head -1)
json_check "$m" 'all(abs(s["kernel_ms"] - 9.0) < 1e-9 and s["launches"] == 5 for s in d["configs"]["default"]["base"] + d["configs"]["default"]["variant"])' \
  "trace: the runs were not timed by their trace: $(cat "$m")"

# --timing trace with the walls named: nothing to lower, an error that says what to pass.
run named bare --timing trace --sandbox "$level"
[ "$rc" -eq 2 ] || fail "named: exit $rc, not 2: $(tail -20 "$log")"
grep -q -- "--timing trace: the kernel tracer writes no trace behind the $level sandbox's walls" "$log" &&
  grep -q "run with --sandbox watch, or --timing auto" "$log" || fail "named: the error does not say it: $(tail -5 "$log")"

# A tracer that writes nothing anywhere: --timing trace cannot be had.
run never never --timing trace
[ "$rc" -eq 2 ] || fail "never: exit $rc, not 2: $(tail -20 "$log")"
grep -q -- "--timing trace: the kernel tracer writes no trace (.*pass --timing auto" "$log" ||
  fail "never: the error does not say it: $(tail -5 "$log")"

pass "a tracer that writes no trace behind the walls: timed without it (auto), the walls lowered (trace, automatic sandbox), or a clear error"
