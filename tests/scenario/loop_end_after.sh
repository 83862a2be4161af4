# measure.end_after_kernels auto (the default) on the CPU stand-in: every run writes the kernel
# trace a traced CUDA program would (format 2: end times), and a run given
# OPTIMAS_TRACE_END_AFTER ends the way liboptimas-trace ends it, after that many launches of the
# kernels OPTIMAS_TRACE_END_KERNELS names, with an X line and without its output or its host work
# after the kernels. Checked: validation runs run whole and record their traces; measured runs
# end early where the variant's validation runs launched the hot kernel as often as the
# baseline's (4 times), and their times still decide (an A/A run gains nothing, a variant with
# hot launches half as long is accepted); a variant that launches it 5 times, one that spends
# longer after its kernels, and `--end-after-kernels off` run whole, and the run says why.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
: > "$WORK/fake-liboptimas-trace.so"

# app NAME VARIANT-NS VARIANT-LAUNCHES VARIANT-TAIL-NS: the stand-in. Its baseline launches
# triad_kernel (_Z5triadv) 4 times for 20 ms each (and sleeps that long), then a helper kernel once for 1 ms, and ends
# 10 ms after its last launch; the variant's copy launches it VARIANT-LAUNCHES times for
# VARIANT-NS each and ends VARIANT-TAIL-NS after. An ended run leaves end_marks/<pid>.
app() {
  cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/$1"
  mkdir -p "$WORK/$1.ends"
  cat > "$WORK/$1/run.sh" <<SH
#!/bin/sh
if [ -n "\$OPTIMAS_TRACE_DIR" ]; then
  case "\$PWD" in
    */work/baseline) ns=20000000 n=4 tail=10000000 ;;
    *) ns=$2 n=$3 tail=$4 ;;
  esac
  t="\$OPTIMAS_TRACE_DIR/trace-\$\$.tsv"
  printf '# optimas-trace 2\nP\t%s\t0\nK\t1\t_Z5triadv\ttriad_kernel()\nK\t2\t_Z6helperv\thelper()\n' "\$\$" > "\$t" || exit 1
  # The kernels' time passes on the host too, or the wall time would not fall with it.
  sleep "\$(printf '0.%09d' \$((n * ns)))"
  i=1
  while [ \$i -le \$n ]; do
    printf 'L\t1\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t%s\t%s\n' \$((i * 100000000)) \$((i * 100000000 + ns)) >> "\$t"
    if [ "\$i" = "\${OPTIMAS_TRACE_END_AFTER:-0}" ] && [ "\$OPTIMAS_TRACE_END_KERNELS" = _Z5triadv ]; then
      printf 'X\t%s\nE\t%s\t0\t%s\n' \$i \$i \$((i * 100000000 + ns + 1000000)) >> "\$t"
      : > "$WORK/$1.ends/\$\$"
      exit 0
    fi
    i=\$((i + 1))
  done
  last=\$((n * 100000000 + ns))
  printf 'L\t2\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t%s\t%s\nE\t%s\t0\t%s\n' \$((last + 100)) \$((last + 1000100)) \
    \$((n + 1)) \$((last + tail)) >> "\$t"
fi
exec ./stream "\$@"
SH
  chmod +x "$WORK/$1/run.sh"
  sed -i 's|^  command: ./stream --n {n} --reps {reps} --seed {seed} --out {output}$|  command: ./run.sh --n {n} --reps {reps} --seed {seed} --out {output}|' \
    "$WORK/$1/optimas.yml"
  grep -q 'command: ./run.sh' "$WORK/$1/optimas.yml" || fail "the run command was not changed"
}

# measure NAME [ARGS...]: an A/A run of app NAME (the fixed rule unless VERDICT names another,
# only the default configuration measured); sets m (its measurement.json), j (its journal) and v (its validation journal).
measure() {
  local name=$1
  shift
  rc=0
  # --sandbox watch: the stand-in leaves its end marks in $WORK, which the walls' private /tmp would hide.
  "$OPTIMAS" run --app "$WORK/$name" --runs-dir "$WORK/runs-$name" --import "$D" --timing trace --sandbox watch \
    --tracer "$WORK/fake-liboptimas-trace.so" --aa --runs 5 --warmup 1 --measure-configs default --verdict "${VERDICT:-fixed}" "$@" \
    > "$WORK/$name.out" 2> "$WORK/$name.log" || rc=$?
  local id
  id=$(ls "$WORK/runs-$name" | grep -E '^[0-9a-f-]{36}$') || fail "$name: no run (exit $rc): $(tail -20 "$WORK/$name.log")"
  m=$(ls "$WORK/runs-$name/$id"/iterations/1/attempt-*/measurement.json 2>/dev/null | head -1)
  [ -n "$m" ] || fail "$name: nothing was measured (exit $rc): $(tail -20 "$WORK/$name.log")"
  j="$(dirname "$m")/measurements.jsonl"
  v="$(dirname "$m")/validation.jsonl"
}

# A/A, ended early: every measured run (warm-ups too) ends after the 4th launch, without output;
# validation ran whole and traced; the traced time is the 4 launches (80 ms), and nothing is gained.
app same 20000000 4 10000000
measure same
[ "$rc" -eq 3 ] || fail "the A/A run exits $rc, not 3: $(tail -20 "$WORK/same.log")"
json_check "$m" 'd["end_after_kernels"]["default"]["launches"] == 4 and d["end_after_kernels"]["default"]["kernels"] == ["_Z5triadv"] and d["end_after_kernels"]["default"]["ended_early"] == 10 and d["end_after_kernels"]["default"]["runs"] == 10 and d["verdict"] != "faster"' \
  "the A/A run's measured runs did not all end after 4 launches: $(cat "$m")"
python3 - "$j" "$v" <<'PY' || fail "the journals are wrong: $(cat "$j" "$v")"
import json, sys
samples = [json.loads(l) for l in open(sys.argv[1])]
assert len(samples) == 10, len(samples)
for s in samples:
    assert s["ended_early"] is True and "output_sha256" not in s and abs(s["kernel_ms"] - 80.0) < 1e-9, s
checks = [json.loads(l) for l in open(sys.argv[2])]
assert checks and all(c["passed"] for c in checks)
for c in checks:
    for side in ("baseline", "variant"):
        t = c["trace"][side]
        assert t["hot_launches"] == 4 and t["launches"] == 5 and t["symbols"] == ["_Z5triadv"], c
        assert abs(t["after_hot_s"] - 0.01) < 1e-9, c
PY
# 5 measured rounds (no confirming round for a run that gains nothing) and the warm-up, two
# sides: every one left its mark; validation runs left none.
[ "$(ls "$WORK/same.ends" | wc -l)" -eq 12 ] || fail "$(ls "$WORK/same.ends" | wc -l) runs ended early, not 12"
grep -q "runs of default end after 4 hot-kernel launches" "$WORK/same.log" || fail "the run does not say where runs end: $(tail "$WORK/same.log")"

# A variant whose hot launches take half the time, its runs ended early: accepted.
app half 10000000 4 10000000
measure half
[ "$rc" -eq 0 ] || fail "the faster variant's run exits $rc, not 0: $(tail -20 "$WORK/half.log")"
json_check "$m" 'd["verdict"] == "faster" and abs(d["speedup"] - 2.0) < 1e-9 and d["end_after_kernels"]["default"]["ended_early"] == d["end_after_kernels"]["default"]["runs"]' \
  "the faster variant was not accepted on runs that ended early: $(cat "$m")"

# Whole runs, with the reason: a variant that launches the hot kernel 5 times; one that spends
# 2 s after its last launch where the baseline spends 10 ms; and the setting off.
app more 20000000 5 10000000
measure more
json_check "$m" '"launches" not in d["end_after_kernels"]["default"] and "the variant launched the hot kernels 5 times on default, the baseline 4" in d["end_after_kernels"]["default"]["reason"]' \
  "a variant with more launches did not run whole: $(cat "$m")"
app tail 20000000 4 2000000000
measure tail
json_check "$m" '"launches" not in d["end_after_kernels"]["default"] and "work may have moved behind the kernels" in d["end_after_kernels"]["default"]["reason"]' \
  "a variant with a longer tail did not run whole: $(cat "$m")"
grep -q "work may have moved behind the kernels" "$WORK/tail.log" || fail "the run does not say why: $(tail "$WORK/tail.log")"
app off 20000000 4 10000000
measure off --end-after-kernels off
json_check "$m" '"end_after_kernels" not in d' "measure.end_after_kernels off still planned an early end: $(cat "$m")"
for n in more tail off; do
  [ -z "$(ls "$WORK/$n.ends")" ] || fail "$n: a run ended early"
done
python3 - "$j" <<'PY' || fail "whole runs were not compared by output: $(cat "$j")"
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)
    assert "ended_early" not in s and len(s["output_sha256"]) == 64 and abs(s["kernel_ms"] - 81.0) < 1e-9, s
PY

# The sequential rule (the default) with runs that end early: the validation checks of default
# (as declared and a fresh seed) are its first two rounds, whole runs whose kernel time is taken
# up to their last hot launch (80 ms, not the 81 of the whole run), as the measured runs that
# ended there measure it; the one measured round a side ended early.
app seq 20000000 4 10000000
VERDICT=sequential measure seq
[ "$rc" -eq 3 ] || fail "the sequential A/A run exits $rc, not 3: $(tail -20 "$WORK/seq.log")"
python3 - "$m" <<'PY' || fail "the validation rounds do not measure what the ended runs measure: $(cat "$m")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict_rule"] == "sequential" and d["from_validation"] == 2 and d["runs"] == 3, d
c = d["configs"]["default"]
for s in c["base"] + c["variant"]:
    assert abs(s["kernel_ms"] - 80.0) < 1e-9 and abs(s["hot_ms"] - 80.0) < 1e-9, s
    assert ("validation" in s) != bool(s.get("ended_early")), s
assert d["end_after_kernels"]["default"]["ended_early"] == 2 == d["end_after_kernels"]["default"]["runs"], d
PY

pass "measured runs end after their hot kernels where the validation traces allow it, and run whole (saying why) where not; the sequential rule's validation rounds measure what the ended runs measure"
