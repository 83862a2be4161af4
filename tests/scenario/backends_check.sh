# optimas backends --check against a local OpenAI-compatible server: a passing check (text and
# --json), a wrong key (exit 1, what to change, no key anywhere), a server that is not there; and
# the listing names each backend's schema dialect.
source "$(dirname "$0")/lib.sh"
: "${FAKE_LLM_SERVER:?ctest sets FAKE_LLM_SERVER}"

KEY="sk-test-SECRET-$RANDOM$RANDOM"
echo '{"summary": "check ok", "edits": [], "withheld": []}' > "$WORK/reply.json"
mkfifo "$WORK/ready"
"$FAKE_LLM_SERVER" "$WORK/reply.json" "$WORK/count" "$KEY" > "$WORK/ready" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$WORK"' EXIT
read -r word port < "$WORK/ready"
[ "$word" = ready ] || fail "server did not start"

cd "$WORK"
export OPTIMAS_TEST_PROXY_KEY="$KEY"
check() { "$OPTIMAS" backends --check -m openai-compatible/test-model --base-url "http://127.0.0.1:$port/v1" \
            --option api_key_env=OPTIMAS_TEST_PROXY_KEY "$@"; }

check --json > ok.json || fail "the check failed: $(cat ok.json)"
json_check ok.json 'd["passed"] is True and d["key"]["status"] == "ok" and d["key"]["variables"] == "OPTIMAS_TEST_PROXY_KEY"'
json_check ok.json 'd["schema"]["status"] == "accepted" and d["schema"]["dialect"] == "openai-compatible-strict" and d["schema"]["strict"] is True'
json_check ok.json '"$schema at /" in d["schema"]["stripped"] and d["answer"] == "follows the reply schema"'
json_check ok.json 'd["usage"]["input_tokens"] == 1234 and d["usage"]["output_tokens"] == 321 and d["usage"]["cost_usd"] == 0'
json_check ok.json 'd["latency_s"] > 0 and d["failure"] is None'
[ "$(cat count)" = 1 ] || fail "one request expected"

check > ok.txt || fail "the check failed: $(cat ok.txt)"
grep -q 'openai-compatible/test-model: check passed' ok.txt || fail "no verdict: $(cat ok.txt)"
grep -qE '^  latency +[0-9.]+ s' ok.txt || fail "no latency: $(cat ok.txt)"
grep -qE '^  tokens +1234 in / 321 out, \$0.0000' ok.txt || fail "no tokens and cost: $(cat ok.txt)"

# A wrong key: exit 1, the variable to change, and neither key anywhere.
expect_fail 1 'to do +the API refused the key in OPTIMAS_TEST_PROXY_KEY' -- \
  env OPTIMAS_TEST_PROXY_KEY=sk-wrong-SECRET-00000000 "$OPTIMAS" backends --check -m openai-compatible/test-model \
  --base-url "http://127.0.0.1:$port/v1" --option api_key_env=OPTIMAS_TEST_PROXY_KEY
OPTIMAS_TEST_PROXY_KEY=sk-wrong-SECRET-00000000 check --json > wrong.json && fail "a wrong key must fail"
json_check wrong.json 'd["passed"] is False and d["key"]["status"] == "rejected" and d["failure"]["kind"] == "auth"'
if grep -rq -e "$KEY" -e sk-wrong-SECRET ok.json ok.txt wrong.json; then fail "a key was printed"; fi

# No key named: the server refuses, and the advice says how to name one.
expect_fail 1 'api_key_env=VAR' -- "$OPTIMAS" backends --check -m openai-compatible/test-model \
  --base-url "http://127.0.0.1:$port/v1"
# Nothing listening: a network failure, exit 1.
expect_fail 1 'cannot be reached' -- "$OPTIMAS" backends --check -m ollama/qwen2.5-coder:32b --base-url http://127.0.0.1:9
# Nothing to check for the builtin backend.
"$OPTIMAS" backends --check -m builtin | grep -q 'nothing to check' || fail "builtin check"

"$OPTIMAS" backends > list.txt
grep -q 'schema: openai-strict: sends only' list.txt || fail "the listing names the dialects: $(cat list.txt)"
grep -q 'schema: anthropic-tool-input: sends every keyword but' list.txt || fail "anthropic dialect: $(cat list.txt)"
pass "backends --check: passed, wrong key, no key, no server, builtin; no key printed"
