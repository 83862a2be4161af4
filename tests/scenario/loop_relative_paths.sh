# optimas run as the README says it, from the folder above the application, with relative
# paths only (--app app, --runs-dir runs, and the default work folders). Each program runs in
# its own scratch copy, so every path optimas hands it must be absolute: the kernel trace folder
# (OPTIMAS_TRACE_DIR) and the output file ({output}). The stand-in is the loop's host program,
# started through a wrapper that records what it was handed and writes the kernel trace a
# traced CUDA program would (liboptimas-trace is only the environment variable here: no GPU).
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
: > "$WORK/fake-liboptimas-trace.so"
SEEN="$WORK/seen.txt"
cat > "$WORK/app/run.sh" <<SH
#!/bin/sh
# What the program is handed, then the trace its kernels would leave, then the program itself.
echo "trace_dir=\$OPTIMAS_TRACE_DIR output=\$2" >> "$SEEN"
t="\$OPTIMAS_TRACE_DIR/trace-\$\$.tsv"
printf '# optimas-trace 1\nP\t%s\t0\nK\t1\t_Z12triad_kernelv\ttriad_kernel()\n' "\$\$" > "\$t" || exit 1
printf 'L\t1\t0\t1\t7\t1\t1\t1\t256\t1\t1\t0\t0\t32\t1000\t2001000\nE\t1\t0\n' >> "\$t"

exec ./stream "\$@"
SH
chmod +x "$WORK/app/run.sh"
sed -i 's|^  command: ./stream --n {n} --reps {reps} --seed {seed} --out {output}$|  command: ./run.sh --out {output} --n {n} --reps {reps} --seed {seed}|' \
  "$WORK/app/optimas.yml"
grep -q 'run.sh --out {output}' "$WORK/app/optimas.yml" || fail "the run command was not changed"

cd "$WORK"
rc=0
"$OPTIMAS" run --app app --runs-dir runs --import "$D" --timing trace --tracer fake-liboptimas-trace.so \
  --aa --runs 2 --warmup 0 --no-confirm > run.out 2> run.log || rc=$?
[ -s "$SEEN" ] || fail "the program never ran (exit $rc): $(tail -20 run.log)"
# Every run of the program was handed absolute paths inside the run store.
while read -r line; do
  [[ "$line" =~ ^trace_dir=(.*)\ output=(.*)$ ]] || fail "unexpected record: $line"
  trace_dir=${BASH_REMATCH[1]} output=${BASH_REMATCH[2]}
  # The baseline's validation runs are not traced: no trace folder then.
  [ -z "$trace_dir" ] || [[ "$trace_dir" == "$WORK/runs/"* ]] ||
    fail "the program was handed the trace folder '$trace_dir', not an absolute one under $WORK/runs"
  [[ "$output" == "$WORK/runs/"* ]] || fail "the program was handed the output '$output', not an absolute one under $WORK/runs"
done < "$SEEN"
grep -q "trace_dir=/" "$SEEN" || fail "no traced run: $(cat "$SEEN")"$'\n'"$(tail -20 run.log)"
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "the run failed (exit $rc): $(tail -20 run.log)"
id=$(ls runs | grep -E '^[0-9a-f-]{36}$')
json_check "runs/$id/run.json" 'd["status"] == "finished" and d["variants"] and all(v["status"] != "failed" for v in d["variants"])' \
  "the A/A run did not finish with a measured variant: $(tail -5 run.log)"

# A suite's layout (cuda-samples: Samples/x/ includes ../../Common): the build reads a header from
# beside the application's folder, which the copy it builds in does not hold. The error says so.
mkdir -p suite/common
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" suite/app
echo '#define SUITE_HEADER 1' > suite/common/suite.h
sed -i '1i #include <suite.h>' suite/app/main.cu
sed -i 's|^  command: g++ -O2 -x c++ -o stream main.cu$|  command: g++ -O2 -I../common -x c++ -o stream main.cu|' suite/app/optimas.yml
(cd suite/app && g++ -O2 -I../common -x c++ -o /dev/null main.cu) || fail "the suite's stand-in does not build in place"
expect_fail 1 'names \.\./common, outside that folder' -- "$OPTIMAS" run --app suite/app --runs-dir runs --import "$D"
pass "with --runs-dir runs, the program gets absolute trace and output paths and the run is measured; a build reaching outside its folder is named"
