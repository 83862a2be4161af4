# Shared by the loop's scenario tests (loop_cheats_results, loop_make, loop_search): optimas run against a local
# OpenAI-compatible server whose replies the test writes. The caller sets APP (the stand-in),
# D (the recorded profile), RUNS, and optionally REPLY_FILE (the file the replies edit).
: "${FAKE_LLM_SERVER:?ctest sets FAKE_LLM_SERVER}"
mkdir -p "$WORK/replies"

servers=()
cleanup() {
  for s in "${servers[@]}"; do kill "$s" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# The default input at twice its size, for the cheats caught by comparing the kernel time a
# variant reports with its wall time: the time it claims to save must stand out of the wall
# time's noise on a loaded machine (at the usual size a claimed 4x passed there, session 36).
LARGE_DEFAULT='s|n: 524288,  reps: 10|n: 1048576, reps: 10|'

# new_app NAME [SED-SCRIPT]: a copy of the stand-in in $WORK/NAME, its optimas.yml edited by sed.
new_app() {
  cp -r "$APP" "$WORK/$1"
  if [ -n "${2:-}" ]; then
    sed -i -e "$2" "$WORK/$1/optimas.yml"
    if cmp -s "$APP/optimas.yml" "$WORK/$1/optimas.yml"; then fail "new_app $1: '$2' changed nothing in optimas.yml"; fi
  fi
}

# reply NAME [KERNEL EVIDENCE FIND REPLACE]...: a reply (docs/reply.schema.json) with
# find/replace edits of $REPLY_FILE (main.cu), in $WORK/replies/NAME.json.
reply() {
  python3 - "$WORK/replies/$1.json" "${REPLY_FILE:-main.cu}" "${@:2}" <<'PY'
import json, sys
out, file, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
edits = []
for k in range(0, len(rest), 4):
    kernel, evidence, find, replace = rest[k:k + 4]
    edits.append({"file": file, "kernel": kernel, "find": find, "replace": replace,
                  "line_start": None, "line_end": None, "new_text": None, "evidence": evidence.split(","),
                  "rationale": "The profile implicates this kernel. Edit " + str(k // 4 + 1) + ".",
                  "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]})
json.dump({"summary": "triad is memory-bound", "edits": edits, "withheld": []}, open(out, "w"))
PY
}

# The stand-in's triad loop, and honest_reply NAME: its honest edit as reply NAME (the triad
# without its repetition, and the dot product's partial sums in one pass instead of sixteen
# strided ones: the same sums in the same order, so the same bits). The first alone saves a fifth
# to a third of the time, which the noise of a busy machine can hide; both together more than
# halve it. The second is outside the hot kernels: a run given it needs --scope file.
TRIAD_LOOP='for (int r = 0; r < 8; ++r) {'
honest_reply() {
  reply "$1" triad_kernel PC1,RF1 "$TRIAD_LOOP" 'for (int r = 0; r < 1; ++r) {' \
    dot_partial_kernel RF1 '  for (int p = 0; p < 16; ++p) {
    double s = 0;
    for (long i = p; i < n; i += 16) s += a[i] * b[i];
    partial[p] = s;
  }' '  double s[16] = {};
  for (long i = 0; i < n; ++i) s[i % 16] += a[i] * b[i];
  for (int p = 0; p < 16; ++p) partial[p] = s[p];'
}

# serve NAME REPLY[,REPLY...]: a fresh fake server; sets port and count (its request counter).
serve() {
  count="$WORK/count-$1"
  mkfifo "$WORK/ready-$1"
  "$FAKE_LLM_SERVER" "$2" "$count" > "$WORK/ready-$1" &
  servers+=($!)
  local word
  read -r word port < "$WORK/ready-$1"
  [ "$word" = ready ] || fail "$1: the fake server did not start"
}

# loop NAME APP-DIR REPLY[,REPLY...] [OPTIONS...]: optimas run with those replies; sets rc, id,
# run_json and log (stderr), and checks that the run folder exists. LOOP_SANDBOX, where set, is
# the runs' --sandbox; LOOP_OPTIONS, where set, are options (words) of every run.
loop() {
  local name=$1 app=$2 replies=$3
  shift 3
  serve "$name" "$replies"
  local before
  before=$(ls "$RUNS" 2>/dev/null || true)
  rc=0
  "$OPTIMAS" run --app "$app" --runs-dir "$RUNS" --cache-dir "$WORK/cache" --no-cache \
    -m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" --import "$D" \
    ${LOOP_SANDBOX:+--sandbox "$LOOP_SANDBOX"} ${LOOP_OPTIONS:-} "$@" \
    > "$WORK/$name.out" 2> "$WORK/$name.log" || rc=$?
  log="$WORK/$name.log"
  id=$(comm -13 <(echo "$before" | sort) <(ls "$RUNS" | sort) | grep -E '^[0-9a-f-]{36}$' || true)
  [ -n "$id" ] || fail "$name: no run folder (exit $rc)"$'\n'"$(cat "$log")"
  run_json="$RUNS/$id/run.json"
  [ -f "$run_json" ] || fail "$name: no $run_json (exit $rc; $(ls -A "$RUNS/$id" | tr '\n' ' '))"$'\n'"$(tail -20 "$log")"
  echo "$name: exit $rc, run $id ($(python3 -c 'import json,sys; print("; ".join(v["key"]+" "+v["status"]+": "+v.get("reason","")[:160] for v in json.load(open(sys.argv[1]))["variants"]))' "$run_json"))"
}

# expect NAME KEY STATUS REASON-REGEX [EXIT]: the variant's status and reason in run.json, and
# the exit code (3, finished without improvement, unless given).
expect() {
  local name=$1 key=$2 status=$3 pattern=$4 code=${5:-3}
  local got
  got=$(python3 -c 'import json,sys
for v in json.load(open(sys.argv[1]))["variants"]:
    if v["key"] == sys.argv[2]: print(v["status"], "-", v.get("reason", ""))' "$run_json" "$key")
  json_check "$run_json" "any(v['key'] == '$key' and v['status'] == '$status' and __import__('re').search(r'''$pattern''', v.get('reason', ''), __import__('re').I) for v in d['variants'])" \
    "$name: $key should be $status with a reason matching /$pattern/; got: ${got:-no such variant}"$'\n'"$(tail -20 "$log")"
  [ "$rc" -eq "$code" ] || fail "$name: exit $rc, expected $code"$'\n'"$(tail -20 "$log")"
}
