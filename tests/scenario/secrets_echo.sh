# No key in anything optimas writes or prints, across every backend, even when the server gives
# the key back: echo_llm_server answers each provider's protocol with a reply that carries the
# request's headers (Authorization, x-api-key, x-goog-api-key), in its summary, its rationale
# and the edited source. For openai, openai-compatible (its key in a variable named only by
# api_key_env), gemini, anthropic and ollama, `optimas ask` (asked, then replayed from the
# cache) and `optimas run` (-v, --json) leave the key in no file under the run store, the
# cache, the SQLite index (its bytes), the corpus export, nor their stdout and stderr; builds
# and programs (which print their environment) see no key variable.
source "$(dirname "$0")/lib.sh"
: "${ECHO_LLM_SERVER:?ctest sets ECHO_LLM_SERVER}"
command -v g++ > /dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
RUNS="$WORK/runs"
export OPENAI_API_KEY="sk-echo-openai-$RANDOM$RANDOM$RANDOM"
export GEMINI_API_KEY="AIza-echo-gemini-$RANDOM$RANDOM$RANDOM"
export ANTHROPIC_API_KEY="sk-ant-echo-$RANDOM$RANDOM$RANDOM"
# A name with nothing of a key in it: only the api_key_env option says it holds one, so it is
# set for the openai-compatible backend that names it (elsewhere it would be any variable).
LLM_ACCESS_VALUE="plain-echo-access-$RANDOM$RANDOM$RANDOM"
unset GOOGLE_API_KEY
export OPTIMAS_TEST_VISIBLE=seen-by-builds
KEYS=("$OPENAI_API_KEY" "$GEMINI_API_KEY" "$ANTHROPIC_API_KEY" "$LLM_ACCESS_VALUE")
KEY_VARS=(OPENAI_API_KEY GEMINI_API_KEY ANTHROPIC_API_KEY LLM_ACCESS)

# The stand-in of the loop tests, whose build and run print their environment.
APP="$WORK/app"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$APP"
sed -i -e 's|command: g++|command: env; g++|' -e 's|command: ./stream|command: env >\&2; ./stream|' "$APP/optimas.yml"
grep -q 'env >&2; ./stream' "$APP/optimas.yml" || fail "the run command was not changed"

# The honest edit of loop_cheats_results (triad without its repetition), the echo in three places.
cat > "$WORK/reply.json" << 'JSON'
{"summary": "triad is memory-bound (@ECHO@)", "edits": [{"file": "main.cu", "kernel": "triad_kernel",
 "find": "for (int r = 0; r < 8; ++r) {", "replace": "for (int r = 0; r < 1; ++r) { // @ECHO@",
 "line_start": null, "line_end": null, "new_text": null, "evidence": ["PC1", "RF1"], "rationale": "@ECHO@",
 "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}], "withheld": []}
JSON

mkfifo "$WORK/ready"
"$ECHO_LLM_SERVER" "$WORK/reply.json" > "$WORK/ready" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$WORK"' EXIT
read -r word port < "$WORK/ready"
[ "$word" = ready ] || fail "the echo server did not start"
URL="http://127.0.0.1:$port"

# no_key_in WHAT PATH...: none of the keys occurs in the bytes of any file there.
no_key_in() {
  local what=$1
  shift
  for k in "${KEYS[@]}"; do
    if grep -rlaF -- "$k" "$@" > "$WORK/leaks" 2> /dev/null; then fail "$what: a key reached $(cat "$WORK/leaks")"; fi
  done
}

# check_backend NAME MODEL BASE-URL ECHOED-HEADER [OPTIONS...]
check_backend() {
  local name=$1 model=$2 url=$3 header=$4
  shift 4
  local out="$WORK/ask-$name"
  for pass in asked replayed; do
    "$OPTIMAS" -v ask "$D" --app "$APP" -m "$model" --base-url "$url" "$@" --cache-dir "$WORK/cache" --out "$out" \
      --json > "$out.$pass.stdout" 2> "$out.$pass.stderr" || fail "$name: ask ($pass) failed: $(tail -5 "$out.$pass.stderr")"
  done
  json_check "$out.replayed.stdout" 'd["results"][0]["from_cache"] is True' "$name: the second ask is replayed"
  # The echo came back and was redacted: the answer names the header, without its value.
  grep -qF -- "$header" "$out.asked.stdout" || fail "$name: the echoed header is not in the answer: $(head -c 3000 "$out.asked.stdout")"
  grep -rqF -- "$header" "$out" || fail "$name: the echoed header is in no file of ask --out"

  local before
  before=$(ls "$RUNS" 2> /dev/null || true)
  rc=0
  "$OPTIMAS" -v run --app "$APP" --runs-dir "$RUNS" --cache-dir "$WORK/cache" -m "$model" --base-url "$url" "$@" \
    --import "$D" --runs 2 --warmup 0 --retries 0 --json > "$WORK/run-$name.stdout" 2> "$WORK/run-$name.stderr" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "$name: run exited $rc: $(tail -5 "$WORK/run-$name.stderr")"
  id=$(comm -13 <(echo "$before" | sort) <(ls "$RUNS" | sort) | grep -E '^[0-9a-f-]{36}$' || true)
  [ -n "$id" ] || fail "$name: no run folder"
  local attempt="$RUNS/$id/iterations/1/attempt-1"
  grep -qF -- "$header" "$attempt/reply-1.txt" || fail "$name: the echo is not in reply-1.txt"
  grep -qF -- "$header" "$attempt/src/main.cu" || fail "$name: the echo is not in the variant's source"
  # Builds and programs printed their environment: no key variable in it, by name.
  local logs=("$RUNS/$id/baseline/build.log" "$attempt/build.log" "$attempt"/runs/*.stderr.log)
  for log in "${logs[@]}"; do
    [ -f "$log" ] || fail "$name: no $log"
    grep -q '^OPTIMAS_TEST_VISIBLE=seen-by-builds' "$log" || fail "$name: $log does not hold the environment"
    for v in "${KEY_VARS[@]}"; do
      if grep -q "^$v=" "$log"; then fail "$name: $v reached the environment of $log"; fi
    done
  done
  no_key_in "$name" "$RUNS" "$WORK/cache" "$out" "$out".* "$WORK/run-$name".*
  echo "$name: no key in ask (asked, replayed) nor run $id (exit $rc)"
}

check_backend openai openai/gpt-4.1 "$URL/v1" 'Authorization: Bearer [REDACTED]'
export LLM_ACCESS="$LLM_ACCESS_VALUE"
check_backend openai-compatible openai-compatible/echo-model "$URL/v1" 'Authorization: Bearer [REDACTED]' \
  --option api_key_env=LLM_ACCESS
unset LLM_ACCESS
check_backend gemini gemini/gemini-2.5-flash "$URL/v1beta" 'x-goog-api-key: [REDACTED]'
check_backend anthropic anthropic/claude-sonnet-4-5 "$URL/v1" 'x-api-key: [REDACTED]'
check_backend ollama ollama/llama3.1 "$URL" 'POST /api/chat'

# What the store gives out: its listing, a run, the index rebuilt, the corpus (file and stdout).
"$OPTIMAS" runs list --runs-dir "$RUNS" --json > "$WORK/list.json" 2> "$WORK/list.stderr" || fail "runs list"
"$OPTIMAS" runs show --runs-dir "$RUNS" "$id" > "$WORK/show.txt" 2> "$WORK/show.stderr" || fail "runs show"
"$OPTIMAS" runs reindex --runs-dir "$RUNS" > "$WORK/reindex.txt" 2>&1 || fail "runs reindex: $(cat "$WORK/reindex.txt")"
"$OPTIMAS" corpus export --runs-dir "$RUNS" --all-variants -o "$WORK/corpus.jsonl" > /dev/null 2> "$WORK/corpus.stderr" ||
  fail "corpus export"
"$OPTIMAS" corpus export --runs-dir "$RUNS" --all-variants -o - > "$WORK/corpus.stdout" 2>> "$WORK/corpus.stderr" ||
  fail "corpus export to stdout"
[ -s "$WORK/corpus.jsonl" ] || fail "the corpus is empty"
[ -f "$RUNS/index.sqlite" ] || fail "no index.sqlite"
# Everything the test made: run store and index, cache, ask folders, every stdout and stderr.
no_key_in "everything" "$WORK"
pass "five backends, an echoing server: no key in any artifact, log, cache, index, corpus or output"
