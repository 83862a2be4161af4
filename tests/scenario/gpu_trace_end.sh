# On a GPU (label "gpu"; skipped elsewhere): liboptimas-trace ends a process after its hot
# kernels (measure.end_after_kernels). examples/rows, which checks its result on the CPU after
# its kernels, runs traced once whole; its most expensive kernel's launches are counted; then it
# runs with OPTIMAS_TRACE_END_AFTER set to that count. Checked: the early run exits 0 before its
# CPU check and its output, with an X line, an end line whose count matches its launch lines,
# exactly that many launches of the kernel, and less wall time; a count it never reaches leaves
# the run whole.
source "$(dirname "$0")/lib.sh"

command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU || skip "no NVIDIA GPU here"
command -v nvcc >/dev/null || skip "nvcc not on PATH"
tracer="$(dirname "$(readlink -f "$OPTIMAS")")/liboptimas-trace.so"
[ -f "$tracer" ] || skip "no liboptimas-trace.so beside optimas (built where CUPTI is found)"

cp -r "$OPTIMAS_SOURCE_DIR/examples/rows" "$WORK/rows"
cd "$WORK/rows"
nvcc -O3 -arch=native -lineinfo -o rows main.cu || fail "rows does not build"

# traced NAME [VAR=VALUE...]: one traced run of rows into $WORK/NAME (its trace) and NAME.out;
# sets rc and ms (its wall time).
traced() {
  local name=$1
  shift
  mkdir -p "$WORK/$name"
  local start
  start=$(date +%s%N)
  rc=0
  env CUDA_INJECTION64_PATH="$tracer" OPTIMAS_TRACE_DIR="$WORK/$name" "$@" \
    ./rows --rows 262144 --cols 768 --reps 5 --seed 7 --out "$WORK/$name.out" > "$WORK/$name.log" 2>&1 || rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
}

traced whole
[ "$rc" -eq 0 ] || fail "the whole traced run failed ($rc): $(tail -5 "$WORK/whole.log")"
whole_ms=$ms
# The kernel with the most GPU time, by mangled name, and its launches.
read -r hot count < <(python3 - "$WORK/whole" <<'PY'
import glob, sys
names, time, count = {}, {}, {}
for path in glob.glob(sys.argv[1] + "/trace-*.tsv"):
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "K":
            names[f[1]] = f[2]
        elif f[0] == "L":
            m = names[f[1]]
            time[m] = time.get(m, 0) + int(f[15]) - int(f[14])
            count[m] = count.get(m, 0) + 1
hot = max(time, key=time.get)
print(hot, count[hot])
PY
)
[ -n "$hot" ] && [ "$count" -gt 0 ] || fail "no kernel in the whole run's trace"
echo "hot kernel $hot: $count launches; whole run ${whole_ms} ms"

traced early OPTIMAS_TRACE_END_AFTER="$count" OPTIMAS_TRACE_END_KERNELS="$hot"
[ "$rc" -eq 0 ] || fail "the ended run exits $rc, not 0: $(tail -5 "$WORK/early.log")"
early_ms=$ms
echo "ended run ${ms} ms"
[ ! -s "$WORK/early.out" ] || fail "the ended run wrote its output: it was not ended before its CPU check"
python3 - "$WORK/early" "$hot" "$count" <<'PY' || fail "the ended run's trace is wrong: $(cat "$WORK"/early/trace-*.tsv | grep -v '^L' | head)"
import glob, sys
files = glob.glob(sys.argv[1] + "/trace-*.tsv")
assert len(files) == 1, files
lines = [l.rstrip("\n").split("\t") for l in open(files[0])]
assert lines[0] == ["# optimas-trace 3"], lines[0]  # with the timeline's M, S, Y and R lines
names = {f[1]: f[2] for f in lines if f[0] == "K"}
launches = [f for f in lines if f[0] == "L"]
hot = sum(1 for f in launches if names[f[1]] == sys.argv[2])
assert hot == int(sys.argv[3]), (hot, sys.argv[3])
x = [f for f in lines if f[0] == "X"]
assert x and int(x[0][1]) == hot, x
records = sum(1 for f in lines if f[0] in ("M", "S", "Y", "R"))
assert lines[-1][0] == "E" and int(lines[-1][1]) == len(launches) and len(lines[-1]) == 5, lines[-1]
assert int(lines[-1][4]) == records, (lines[-1], records)
PY
[ "$early_ms" -lt "$whole_ms" ] || fail "the ended run took ${early_ms} ms, the whole run ${whole_ms} ms"

traced never OPTIMAS_TRACE_END_AFTER=$((count + 1)) OPTIMAS_TRACE_END_KERNELS="$hot"
[ "$rc" -eq 0 ] || fail "the run with an unreached count failed ($rc): $(tail -5 "$WORK/never.log")"
cmp -s "$WORK/never.out" "$WORK/whole.out" || fail "the run with an unreached count did not write the whole output"
! grep -q '^X' "$WORK"/never/trace-*.tsv || fail "the run with an unreached count was ended"

pass "liboptimas-trace ends a run after $count launches of its hot kernel (${early_ms} ms against ${whole_ms} ms whole), and leaves a run whole that never gets there"
