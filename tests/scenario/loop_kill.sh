# optimas run killed with SIGKILL at random points and resumed each time: every run resumes to
# a finished run, keeps every sample journaled before the kill, and leaves no process behind.
# The stand-in is tests/scenario/loop-app. Wrappers around its build and run commands count
# them; the one chosen as the stop point tells the test through a FIFO and blocks until it is
# killed, so the kill always lands while a program or a build runs (baseline, validation or
# measurement, taken in turn) and nothing here waits on a timer.
#   OPTIMAS_KILL_POINTS=N  kill at N points (default 18, six a phase, about 2.9 s each; each CI run
#                          draws new points, so the runs together cover many more)
#   OPTIMAS_KILL_SEED=S    choose the same points as an earlier run (it prints its seed)
source "$(dirname "$0")/lib.sh"
: "${FAKE_LLM_SERVER:?ctest sets FAKE_LLM_SERVER}"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

POINTS=${OPTIMAS_KILL_POINTS:-18}
SEED=${OPTIMAS_KILL_SEED:-$$}
RANDOM=$SEED
echo "killing optimas at $POINTS points (OPTIMAS_KILL_SEED=$SEED chooses them again)"
D="$OPTIMAS_TEST_DATA/h200/stream"

server="" optimas="" first="" STATE=""
cleanup() {
  [ -n "$optimas" ] || [ ! -s "$WORK/optimas.pid" ] || optimas=$(cat "$WORK/optimas.pid")
  [ -z "$optimas" ] || kill -KILL "$optimas" 2>/dev/null || true
  # The subshell that reports how optimas ended would wait for a reader of its FIFO forever,
  # holding ctest's output open.
  [ -z "$first" ] || kill -KILL "$first" 2>/dev/null || true
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$WORK" "$STATE"
}
trap cleanup EXIT

# What the wrappers below write (the event count, the build cache, the FIFOs) lies in /dev/shm,
# which the sandbox's walls leave as it is: behind them WORK (under /tmp) is seen read-only at
# best, and a wrapper that could not count its event would never reach the stop point. So the
# kills land behind the walls this machine allows (the default level), not only where they fall.
STATE=$(mktemp -d /dev/shm/optimas-loop-kill-XXXXXX 2>/dev/null) || { STATE=$WORK/state && mkdir "$STATE"; }

# Small inputs (a run of the program takes milliseconds) and a build that compiles each distinct
# source once: the test is about kills, not about g++.
mkdir -p "$STATE/compiled"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
sed -i -e "s|command: g++ -O2 -x c++ -o stream main.cu|command: $WORK/build.sh|" \
  -e "s|command: ./stream|command: $WORK/wrapper.sh ./stream|" \
  -e "s|n: 131072,  reps: 10|n: 16384, reps: 2|" -e "s|n: 524288,  reps: 10|n: 65536, reps: 2|" \
  -e "s|n: 393216,  reps: 10|n: 49152, reps: 2|" "$WORK/app/optimas.yml"
grep -q "command: $WORK/build.sh" "$WORK/app/optimas.yml" || fail "the build command was not wrapped"
grep -q "wrapper.sh ./stream" "$WORK/app/optimas.yml" || fail "the run command was not wrapped"
[ "$(grep -c 'reps: 2,' "$WORK/app/optimas.yml")" -eq 3 ] || fail "the configurations were not made small"

mkfifo "$STATE/stopped" "$STATE/never"
# Counts builds and runs (events.log: number, kind), and blocks at the chosen one until killed.
cat > "$WORK/event.sh" <<EOF
n=\$((\$(cat "$STATE/events" 2>/dev/null || echo 0) + 1))
echo "\$n" > "$STATE/events"
echo "\$n \$1" >> "$STATE/events.log"
if [ "\$n" -eq "\$(cat "$STATE/stop_at")" ]; then
  echo "stopped \$n \$1" > "$STATE/stopped"
  read -r _ < "$STATE/never"
fi
EOF
cat > "$WORK/wrapper.sh" <<EOF
#!/bin/bash
case "\$*" in
*/out/check-*) phase=validation ;;
*/out/measure-*) phase=measurement ;;
*) phase=baseline ;;
esac
source "$WORK/event.sh" "\$phase"
exec "\$@"
EOF
cat > "$WORK/build.sh" <<EOF
#!/bin/bash
source "$WORK/event.sh" build
h=\$(sha256sum main.cu | cut -c1-16)
if [ ! -f "$STATE/compiled/\$h" ]; then
  g++ -O2 -x c++ -o "$STATE/compiled/\$h.\$\$" main.cu && mv "$STATE/compiled/\$h.\$\$" "$STATE/compiled/\$h" || exit 1
fi
cp "$STATE/compiled/\$h" stream
EOF
chmod +x "$WORK/wrapper.sh" "$WORK/build.sh"

# The honest edit of loop_resume.sh: triad without its repetition.
python3 - "$WORK/honest.json" <<'PY'
import json, sys
edit = {"file": "main.cu", "kernel": "triad_kernel", "find": "for (int r = 0; r < 8; ++r) {",
        "replace": "for (int r = 0; r < 1; ++r) {", "line_start": None, "line_end": None, "new_text": None,
        "evidence": ["PC1"], "rationale": "Each repetition recomputes the same value.",
        "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}
json.dump({"summary": "triad repeats its work", "edits": [edit], "withheld": []}, open(sys.argv[1], "w"))
PY
mkfifo "$WORK/ready"
"$FAKE_LLM_SERVER" "$WORK/honest.json" "$WORK/count" > "$WORK/ready" &
server=$!
read -r word port < "$WORK/ready"
[ "$word" = ready ] || fail "the fake server did not start"

# No tuning stage: its builds and runs would be more of the same kinds of stop points.
run_args=(-m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" --import "$D" --scope file
  --retries 0 --fresh-seeds 0 --runs 2 --warmup 0 --no-tune --cache-dir "$WORK/cache" --no-cache)

# Processes of this test's runs still alive: any whose working folder or command line lies in
# WORK, other than the fake server.
leftovers() {
  python3 - "$WORK" "$server" <<'PY'
import os, sys
work, server = sys.argv[1], sys.argv[2]
for pid in filter(str.isdigit, os.listdir("/proc")):
    if pid in (server, str(os.getpid())):
        continue
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue  # gone, or a zombie
    if work in cwd or work in cmd:
        print(f"  pid {pid} in {cwd}: {cmd}")
PY
}

# One run without a kill: the events of a whole run, by phase, and a warm build cache.
echo 0 > "$STATE/stop_at"
rc=0
"$OPTIMAS" run --app "$WORK/app" --runs-dir "$WORK/runs-whole" "${run_args[@]}" > "$WORK/whole.out" 2> "$WORK/whole.log" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "a run without a kill: exit $rc"$'\n'"$(cat "$WORK/whole.log")"
# A build belongs to the phase of the runs after it: the baseline's, then the variant's validation.
declare -A phase_events
kind_after=""
while read -r n kind; do
  [ "$kind" = build ] && { [ -z "$kind_after" ] && kind_after=baseline || kind_after=validation; }
  [ "$kind" = build ] && kind=$kind_after
  phase_events[$kind]+="$n "
done < "$STATE/events.log"
for phase in baseline validation measurement; do
  [ -n "${phase_events[$phase]:-}" ] || fail "a whole run had no $phase event: $(cat "$STATE/events.log")"
done
echo "a whole run: $(wc -l < "$STATE/events.log") builds and program runs (baseline: ${phase_events[baseline]}; validation: ${phase_events[validation]}; measurement: ${phase_events[measurement]})"
[ -z "$(leftovers)" ] || fail "a run without a kill left processes behind:"$'\n'"$(leftovers)"
# Where the walls stop the build (without /dev/shm its scripts write WORK), the whole run goes on
# watched and says why; every resumed run must say the same, whichever process found it.
sandbox_said=$(python3 -c 'import json,glob,sys; d=json.load(open(glob.glob(sys.argv[1] + "/*-*-*-*-*/run.json")[0]))
print("%s %s" % (d["sandbox"]["level"], any("fails behind the" in w for w in d.get("warnings", []))))' "$WORK/runs-whole")
echo "sandbox in a whole run: $sandbox_said"
rm -rf "$WORK/runs-whole"

declare -A killed_in
for ((i = 1; i <= POINTS; i++)); do
  phases=(baseline validation measurement)
  phase=${phases[$((i % 3))]}
  read -r -a events <<< "${phase_events[$phase]}"
  stop=${events[$((RANDOM % ${#events[@]}))]}
  runs="$WORK/runs-$i"
  echo "$stop" > "$STATE/stop_at"
  rm -f "$STATE/events" "$STATE/events.log" "$WORK/optimas.pid"

  # The two lines of this point (the stop, then how optimas ended) come from two writers, read
  # through one descriptor held open for reading and writing: opened anew for the second line,
  # the FIFO could still have the first writer attached, and its close read as an empty line.
  exec 3<> "$STATE/stopped"
  (
    exec 3>&-
    rc=0
    # optimas' pid is written before it starts (exec keeps it), so before any stop point.
    bash -c 'echo $$ > "$0"; exec "$@"' "$WORK/optimas.pid" "$OPTIMAS" run --app "$WORK/app" --runs-dir "$runs" \
      "${run_args[@]}" > "$WORK/first.out" 2> "$WORK/first.log" || rc=$?
    echo "exited $rc" > "$STATE/stopped"
  ) 2> /dev/null & # without bash's own "Killed" notice
  first=$!
  read -r word n kind <&3
  [ "$word" = stopped ] || fail "point $i: the run ended ($n) before event $stop:"$'\n'"$(cat "$WORK/first.log")"
  optimas=$(cat "$WORK/optimas.pid")
  kill -KILL "$optimas" || fail "point $i: optimas (pid $optimas) could not be killed"
  read -r word rc <&3
  exec 3>&-
  [ "$word $rc" = "exited 137" ] || fail "point $i: optimas was not killed: $word $rc"
  optimas=""
  wait "$first" || true
  first=""
  killed_in[$kind]=$((${killed_in[$kind]:-0} + 1))

  id=$(ls "$runs" | grep -E '^[0-9a-f-]{36}$') || fail "point $i (event $stop, $kind): no run folder"
  dir="$runs/$id"
  rm -rf "$WORK/before"
  mkdir -p "$WORK/before"
  (cd "$dir" && find . -name '*.jsonl' -exec cp --parents {} "$WORK/before" \;)

  echo 0 > "$STATE/stop_at"
  rc=0
  "$OPTIMAS" run --resume "$id" --runs-dir "$runs" > "$WORK/resume.out" 2> "$WORK/resume.log" || rc=$?
  context="point $i (event $stop, $kind, run $id)"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "$context: the resumed run exited $rc"$'\n'"$(cat "$WORK/resume.log")"
  json_check "$dir/run.json" 'd["status"] == "finished" and d["variants"][0]["status"] in ("accepted", "rejected")' \
    "$context: the resumed run did not finish with a measured variant: $(cat "$WORK/resume.log")"
  # Every sample journaled before the kill is still there, first and unchanged.
  while read -r journal; do
    [ -f "$dir/$journal" ] || fail "$context: $journal is gone after the resume"
    lines=$(wc -l < "$WORK/before/$journal")
    [ "$(head -n "$lines" "$dir/$journal")" = "$(cat "$WORK/before/$journal")" ] ||
      fail "$context: $journal lost or changed lines:"$'\n'"$(cat "$WORK/before/$journal")"$'\n---\n'"$(cat "$dir/$journal")"
  done < <(cd "$WORK/before" && find . -name '*.jsonl')
  json_check "$dir/run.json" "'%s %s' % (d['sandbox']['level'], any('fails behind the' in w for w in d.get('warnings', []))) == '$sandbox_said'" \
    "$context: the sandbox level and its warning, '$sandbox_said' in a whole run: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["sandbox"], d.get("warnings"))' "$dir/run.json")"
  [ ! -e "$dir/children.json" ] || fail "$context: children.json is left after the run: $(cat "$dir/children.json")"
  [ ! -e "$dir/work" ] || fail "$context: the scratch copies are left after the run"
  left=$(leftovers)
  [ -z "$left" ] || fail "$context: processes left behind:"$'\n'"$left"$'\n'"$(cat "$WORK/resume.log")"
  rm -rf "$runs"
done

echo "killed in: baseline ${killed_in[baseline]:-0}, build ${killed_in[build]:-0}, validation ${killed_in[validation]:-0}, measurement ${killed_in[measurement]:-0}"
pass "$POINTS/$POINTS runs killed with SIGKILL resumed to the end with every journaled sample, and left no process behind"
