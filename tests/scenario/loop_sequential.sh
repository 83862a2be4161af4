# measure.verdict sequential (--verdict sequential) on the CPU stand-in: every measured run writes
# the kernel trace a traced CUDA program would (liboptimas-trace is only the environment variable
# here: no GPU), with launches of the hot kernel triad_kernel and of a kernel that is not hot.
# Each run's time in the hot kernels is journaled (hot_ms), and the looks stop as soon as the
# decision is clear: an A/A comparison whose runs agree is "no gain" after 3 runs a side (two of
# them its validation runs), a
# variant whose hot launches take half the time is accepted after 3, and a variant whose runs
# launch no hot kernel is measured by the fixed rule, which says why.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
: > "$WORK/fake-liboptimas-trace.so"

# app NAME BASELINE-NS VARIANT-NS VARIANT-KERNEL: the stand-in, whose traced runs launch
# VARIANT-KERNEL (in the variant's scratch copy; triad_kernel in the baseline's) 4 times for the
# given nanoseconds each, and an untraced helper kernel once for 1 ms.
app() {
  cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/$1"
  cat > "$WORK/$1/run.sh" <<SH
#!/bin/sh
if [ -n "\$OPTIMAS_TRACE_DIR" ]; then
  case "\$PWD" in
    */work/baseline) ns=$2 kernel=triad_kernel ;;
    *) ns=$3 kernel=$4 ;;
  esac
  t="\$OPTIMAS_TRACE_DIR/trace-\$\$.tsv"
  printf '# optimas-trace 1\nP\t%s\t0\nK\t1\t_Z1kv\t%s()\nK\t2\t_Z6helperv\thelper()\n' "\$\$" "\$kernel" > "\$t" || exit 1
  for i in 1 2 3 4; do
    printf 'L\t1\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t%s\t%s\n' \$((i * 10000000)) \$((i * 10000000 + ns)) >> "\$t"
  done
  printf 'L\t2\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t90000000\t91000000\nE\t5\t0\n' >> "\$t"
fi
exec ./stream "\$@"
SH
  chmod +x "$WORK/$1/run.sh"
  sed -i 's|^  command: ./stream --n {n} --reps {reps} --seed {seed} --out {output}$|  command: ./run.sh --n {n} --reps {reps} --seed {seed} --out {output}|' \
    "$WORK/$1/optimas.yml"
  grep -q 'command: ./run.sh' "$WORK/$1/optimas.yml" || fail "the run command was not changed"
}

# measure NAME: an A/A run of app NAME with the sequential verdict; sets m (its measurement.json)
# and j (its journal).
measure() {
  rc=0
  "$OPTIMAS" run --app "$WORK/$1" --runs-dir "$WORK/runs-$1" --import "$D" --timing trace \
    --tracer "$WORK/fake-liboptimas-trace.so" --aa --runs 5 --warmup 1 --verdict sequential \
    > "$WORK/$1.out" 2> "$WORK/$1.log" || rc=$?
  local id
  id=$(ls "$WORK/runs-$1" | grep -E '^[0-9a-f-]{36}$') || fail "$1: no run (exit $rc): $(tail -20 "$WORK/$1.log")"
  m=$(ls "$WORK/runs-$1/$id"/iterations/1/attempt-*/measurement.json 2>/dev/null | head -1)
  [ -n "$m" ] || fail "$1: nothing was measured (exit $rc): $(tail -20 "$WORK/$1.log")"
  j="$(dirname "$m")/measurements.jsonl"
}

# A/A, the runs agreeing exactly: no gain at the first look, 3 rounds instead of the fixed rule's 5.
app same 2000000 2000000 triad_kernel
measure same
[ "$rc" -eq 3 ] || fail "the A/A run exits $rc, not 3: $(tail -20 "$WORK/same.log")"
json_check "$m" 'd["verdict_rule"] == "sequential" and d["runs"] == 3 and len(d["looks"]) == 1 and d["looks"][0]["call"] == "no gain" and d["rule"]["looks"] == [3, 5, 8, 10]' \
  "the A/A comparison did not stop with no gain at the first look: $(cat "$m")"
# The two validation checks of the default configuration (as declared, and a fresh seed), traced,
# are its first two rounds and its warm-up: one round a side is measured, the baseline first
# (both validation runs ran the variant first).
json_check "$m" 'd["from_validation"] == 2 and d["warmup"] == 0 and [s.get("validation") for s in d["configs"]["default"]["base"]][:2] == ["default", d["configs"]["default"]["base"][1]["validation"]] and d["configs"]["default"]["base"][1]["validation"].startswith("default+seed") and len(d["configs"]["default"]["variant"]) == 3' \
  "the validation runs are not the first rounds: $(cat "$m")"
[ "$(wc -l < "$j")" -eq 2 ] || fail "the journal has $(wc -l < "$j") samples, not the one measured round a side: $(cat "$j")"
python3 - "$j" <<'PY' || fail "the measured round is not round 2, baseline first: $(cat "$j")"
import json, sys
s = [json.loads(line) for line in open(sys.argv[1])]
assert [(x["round"], x["role"]) for x in s] == [(2, "baseline"), (2, "variant")], s
PY
# Each run's hot time, measured or from validation: the 4 launches of triad_kernel (8 ms), not
# the helper; and the same kernel time in both kinds of round.
python3 - "$m" <<'PY' || fail "the hot times are wrong: $(cat "$m")"
import json, sys
d = json.load(open(sys.argv[1]))["configs"]["default"]
for s in d["base"] + d["variant"]:
    assert abs(s["hot_ms"] - 8.0) < 1e-9 and s["hot_launches"] == 4 and abs(s["kernel_ms"] - 9.0) < 1e-9, s
PY

# A variant whose hot launches take half the time: accepted at the first look (the A/A run that
# accepts exits 0 and says so).
app half 2000000 1000000 triad_kernel
measure half
[ "$rc" -eq 0 ] || fail "the faster variant's run exits $rc, not 0: $(tail -20 "$WORK/half.log")"
json_check "$m" 'd["runs"] == 3 and d["looks"][0]["call"] == "faster" and abs(d["speedup"] - 2.0) < 1e-9 and "after 3 run(s) a side (sequential" in d["decision"]' \
  "the faster variant was not accepted at the first look: $(cat "$m")"
# The summary calls the primary configuration's whole runs a screen, not "no significant change"
# beside the accepted speedup.
grep -E '^ +default +whole runs, screened +1\.800x' "$WORK/half.out" > /dev/null ||
  fail "the summary does not call default's whole runs screened: $(cat "$WORK/half.out")"

# A variant that launches no hot kernel (it renamed triad_kernel): the fixed rule, with the reason.
app renamed 2000000 1000000 other_kernel
measure renamed
json_check "$m" '"verdict_rule" not in d and "launched none of the hot kernels" in d["note"] and d["runs"] == 5 and not any("validation" in s for s in d["configs"]["default"]["base"])' \
  "the renamed kernel's variant was not measured by the fixed rule: $(cat "$m")"
grep -q "launched none of the hot kernels" "$WORK/renamed.log" || fail "the run does not say why: $(tail "$WORK/renamed.log")"

# The warning that no variant can be accepted belongs to the fixed rule: its rank test on 3 whole
# runs a side cannot reach p < 0.05. The sequential rule's test on traced launches can, and the
# warning once told runs that then accepted variants that they could not.
for rule in sequential fixed; do
  "$OPTIMAS" run --app "$WORK/half" --runs-dir "$WORK/runs-warn-$rule" --import "$D" --timing trace \
    --tracer "$WORK/fake-liboptimas-trace.so" --aa --runs 3 --verdict "$rule" --execute no \
    > /dev/null 2> "$WORK/warn-$rule.log" || true
  grep -q "run: " "$WORK/warn-$rule.log" || fail "$rule: the run did not start: $(tail "$WORK/warn-$rule.log")"
done
grep -q "cannot reach p" "$WORK/warn-sequential.log" &&
  fail "the sequential rule warns that it cannot accept: $(grep 'cannot reach' "$WORK/warn-sequential.log")"
grep -q "with 3 runs the rank test cannot reach p < 0.05" "$WORK/warn-fixed.log" ||
  fail "the fixed rule with 3 runs does not warn: $(tail "$WORK/warn-fixed.log")"

pass "measure.verdict sequential journals each run's hot-kernel time and stops at the first clear look; without hot launches the fixed rule measures"
