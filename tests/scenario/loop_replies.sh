# optimas run on replies that miss their target (issue 32), end to end without a GPU: the host
# stand-in for stream, the recorded H200 profile and a local model server. An edit whose file is
# a path ending in main.cu, or that cites no evidence the diagnostics have, is refused by the
# guardrails, and the retry's prompt tells the model why; a NUL byte in replace is a reply error.
# Before, all three were applied to the app's own main.cu with exit 0.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app"
RUNS="$WORK/runs"
source "$(dirname "$0")/loop_lib.sh"

FIND="for (int r = 0; r < 8; ++r) {"
REPLACE="for (int r = 0; r < 1; ++r) {"
reply honest triad_kernel PC1,RF1 "$FIND" "$REPLACE"
reply nope triad_kernel NOPE999 "$FIND" "$REPLACE"
REPLY_FILE=/tmp/x/main.cu reply absolute triad_kernel PC1,RF1 "$FIND" "$REPLACE"
REPLY_FILE=../../x/main.cu reply relative triad_kernel PC1,RF1 "$FIND" "$REPLACE"
python3 - "$WORK/replies/honest.json" "$WORK/replies/nul.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["edits"][0]["replace"] += "\0"
json.dump(r, open(sys.argv[2], "w"))  # written as \u0000
PY
grep -qF '\u0000' "$WORK/replies/nul.json" || fail "the NUL reply has no \\u0000"

# status KEY STATUS REASON-REGEX: the variant's status and reason in run.json.
status() {
  json_check "$run_json" "any(v['key'] == '$1' and v['status'] == '$2' and __import__('re').search(r'''$3''', v.get('reason', '')) for v in d['variants'])" \
    "$name: $1 should be $2 with a reason matching /$3/"$'\n'"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variants"])' "$run_json")"
}

for name in absolute relative; do
  loop "$name" "$APP" "$WORK/replies/$name.json,$WORK/replies/honest.json" --retries 1 --execute no
  file=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["edits"][0]["file"])' "$WORK/replies/$name.json")
  status i1a1 guardrail_rejected "file \"$file\" is not one of the prompt's sources \(main.cu\)"
  json_check "$RUNS/$id/iterations/1/attempt-1/guardrails.json" "[v['rule'] for v in d] == ['file']" "$name: guardrails.json"
  status i1a2 not_measured 'built, not run'
  grep -qF "guardrail file: edit 1: file \"$file\" is not one of the prompt's sources" "$count.request-2.txt" \
    || fail "$name: the retry's prompt does not say why the edit was refused"
  src="$RUNS/$id/iterations/1/attempt-1/src/main.cu"
  [ ! -e "$src" ] || cmp -s "$APP/main.cu" "$src" || fail "$name: the refused edit was applied"
done

name=nope
loop nope "$APP" "$WORK/replies/nope.json" --retries 0 --execute no
status i1a1 guardrail_rejected 'edit 1 cites NOPE999, none of them an evidence ID of the prompt \(rule 5\)'
[ "$rc" -eq 3 ] || fail "nope: exit $rc, expected 3"

name=nul
loop nul "$APP" "$WORK/replies/nul.json" --retries 0 --execute no
status i1a1 invalid_reply 'edits\[0\]\.replace: contains a NUL byte'
[ "$rc" -eq 3 ] || fail "nul: exit $rc, expected 3"
pass "loop_replies: foreign files and unknown evidence refused by the guardrails with the reason sent back; NUL refused"
