# optimas ask against a local OpenAI-compatible server: a round trip into parsed, validated
# edits; the replay comes from the cache without a request; the key never reaches a file.
source "$(dirname "$0")/lib.sh"
: "${FAKE_LLM_SERVER:?ctest sets FAKE_LLM_SERVER}"

D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$OPTIMAS_SOURCE_DIR/examples/stream"
KEY="sk-test-SECRET-$RANDOM$RANDOM"
cat > "$WORK/reply.json" <<'JSON'
{"summary": "triad is DRAM-bound; declare non-aliasing pointers", "edits": [{"file": "main.cu", "kernel": "triad_kernel",
 "find": "double* a, const double* b, const double* c, double scalar, int n)", "replace": "double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c, double scalar, int n)",
 "line_start": null, "line_end": null, "new_text": null, "evidence": ["PC1", "RF1"], "rationale": "no aliasing",
 "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}], "withheld": []}
JSON
mkfifo "$WORK/ready"
"$FAKE_LLM_SERVER" "$WORK/reply.json" "$WORK/count" "$KEY" > "$WORK/ready" &
server=$!
trap 'curl -s -X POST "http://127.0.0.1:$port/shutdown" >/dev/null 2>&1; kill $server 2>/dev/null; rm -rf "$WORK"' EXIT
read -r word port < "$WORK/ready"
[ "$word" = ready ] || fail "server did not start"

cd "$WORK"
export OPENAI_API_KEY="$KEY"
ask() { "$OPTIMAS" -q ask "$D" --app "$APP" -m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" \
          --option api_key_env=OPENAI_API_KEY --cache-dir cache --out out --json "$@"; }
ask > first.json || fail "first ask: $(cat first.json)"
json_check first.json 'd["results"][0]["from_cache"] is False and d["results"][0]["errors"] == []'
json_check first.json 'd["results"][0]["reply"]["edits"][0]["kernel"] == "triad_kernel"'
json_check first.json 'd["results"][0]["usage"]["input_tokens"] == 1234 and d["results"][0]["usage"]["output_tokens"] == 321'
[ "$(cat count)" = 1 ] || fail "one request expected"

# The replay comes from the cache: no request reaches the server.
ask > second.json || fail "second ask"
json_check second.json 'd["results"][0]["from_cache"] is True and d["totals"]["cached_calls"] == 1'
python3 -c 'import json,sys; a,b=(json.load(open(f))["results"][0]["reply"] for f in sys.argv[1:]); sys.exit(a != b)' \
  first.json second.json || fail "the cached reply differs from the first"
[ "$(cat count)" = 1 ] || fail "the cached replay made a request"
ask --no-cache > third.json
[ "$(cat count)" = 2 ] || fail "--no-cache must call the server"

# A wrong key: an auth failure that names the problem, without the key.
OPENAI_API_KEY="sk-wrong-SECRET-0000000" "$OPTIMAS" ask "$D" --app "$APP" -m openai-compatible/test-model \
  --base-url "http://127.0.0.1:$port/v1" --option api_key_env=OPENAI_API_KEY --no-cache > wrong.txt 2>&1 \
  && fail "a wrong key must fail"
# Without api_key_env no key is sent at all, so the server refuses.
"$OPTIMAS" ask "$D" --app "$APP" -m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" --no-cache \
  > nokey.txt 2>&1 && fail "an unnamed key must not be sent"
grep -q 'api_key_env' nokey.txt || fail "the auth failure says how to name the key: $(cat nokey.txt)"
grep -q 'auth' wrong.txt || fail "auth failure: $(cat wrong.txt)"
grep -q 'sk-wrong-SECRET' wrong.txt && fail "the key leaked into an error message"
if grep -rq "$KEY" cache out first.json second.json third.json wrong.txt; then fail "the API key reached a file"; fi
pass "round trip through a local OpenAI-compatible server, cached replay, no leaked key"
