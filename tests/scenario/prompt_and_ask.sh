# optimas prompt for every subset and the baseline; optimas ask through the manual backend:
# prompt to a file, answer from a file, parsed and validated edits.
source "$(dirname "$0")/lib.sh"

D="$OPTIMAS_TEST_DATA/h200/stencil"
APP="$OPTIMAS_SOURCE_DIR/examples/stencil"
for subset in pc ia roofline pc,ia pc,roofline ia,roofline pc,ia,roofline; do
  "$OPTIMAS" -q prompt "$D" --app "$APP" --diagnostics "$subset" --json > "$WORK/p.json"
  json_check "$WORK/p.json" 'len(d) == 1 and "rhs_kernel" in d[0]["user"] and "=== USER ===" not in d[0]["user"]' "$subset"
  for kind in pc:PC ia:IA roofline:RF; do
    want=0; [[ ",$subset," == *",${kind%%:*},"* ]] && want=1
    json_check "$WORK/p.json" "(\"[${kind##*:}1]\" in d[0][\"user\"]) == bool($want)" "$subset: ${kind##*:} evidence"
  done
done
"$OPTIMAS" -q prompt "$D" --app "$APP" --code-only > "$WORK/base.txt"
grep -q 'code-only baseline' "$WORK/base.txt" || fail "baseline prompt"
grep -qE '\[(PC|IA|RF)[0-9]+\]' "$WORK/base.txt" && fail "the baseline must carry no evidence"
"$OPTIMAS" -q prompt "$D" --app "$APP" --token-budget 1 --out "$WORK/chunks" > /dev/null
[ "$(ls "$WORK/chunks" | grep -c user.md)" -eq 6 ] || fail "chunking per kernel and source: $(ls "$WORK/chunks")"

# The manual backend: first call writes the prompt and stops (exit 4) saying where the answer goes.
cd "$WORK"
expect_fail 4 'save the whole answer as chat/reply-[0-9a-f]+\.md' -- "$OPTIMAS" ask "$D" --app "$APP" -m manual --work-dir chat
reply=$(ls chat | sed -n 's/^prompt-\(.*\)\.md$/chat\/reply-\1.md/p')
{
  echo "The stencil kernels wait on global loads; here is my answer."
  echo '```json'
  echo '{"summary": "rhs_kernel: read-only inputs", "edits": [{"file": "main.cu", "kernel": "rhs_kernel",'
  echo '  "find": "const double* u", "replace": "const double* __restrict__ u", "line_start": null, "line_end": null,'
  echo '  "new_text": null, "evidence": ["PC1", "RF1"], "rationale": "no aliasing",'
  echo '  "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}], "withheld": []}'
  echo '```'
} > "$reply"
"$OPTIMAS" -q ask "$D" --app "$APP" -m manual --work-dir chat --json --out out > ask.json
json_check ask.json 'd["results"][0]["format"] == "fenced-json" and d["results"][0]["errors"] == []'
json_check ask.json 'd["results"][0]["reply"]["edits"][0]["evidence"] == ["PC1", "RF1"]'
[ -f out/prompt-1.result.json ] && [ -f out/prompt-1.reply.txt ] || fail "artifacts"
# A reply that breaks the schema is a recorded failure with its reasons, not a crash.
echo '{"summary": 3, "edits": "none"}' > "$reply"
expect_fail 1 'not every reply could be used' -- "$OPTIMAS" ask "$D" --app "$APP" -m manual --work-dir chat --out out2
grep -q 'summary: expected string' out2/prompt-1.result.json || fail "schema errors recorded: $(cat out2/prompt-1.result.json)"
# The builtin optimizer costs nothing, and ask's totals say so, as a run's replies.json does.
"$OPTIMAS" -q ask "$D" --app "$APP" -m builtin --json > builtin.json || fail "builtin ask: $(cat builtin.json)"
json_check builtin.json 'd["totals"]["cost_usd"] == 0 and d["totals"]["calls"] == len(d["results"]) > 0'
json_check builtin.json 'all(r["usage"]["cost_usd"] == 0 for r in d["results"])'
expect_fail 2 'the builtin backend has no option "allow_fp" \(its options: allow_fp_changes\)' -- \
  "$OPTIMAS" ask "$D" --app "$APP" -m builtin --option allow_fp=true
expect_fail 2 'unknown model provider "openia"' -- "$OPTIMAS" ask "$D" --app "$APP" -m openia/gpt-5
pass "prompt subsets, baseline, chunking, manual round trip"
