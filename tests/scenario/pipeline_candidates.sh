# The variant pipeline (docs/pipeline.md) on a round of the builtin's candidates: examples/accuracy
# with its recorded H200 profile, where the builtin offers two alternatives (restrict,
# loads_in_flight), so a round has three candidates whose sources are known before they are
# asked. Built with nvcc, not run (--execute no; no GPU here). Checked: with builds made ahead on
# two lanes, every candidate takes a build made ahead for its very sources (build.json says so),
# the candidates' edits are those of a run that builds one at a time (--build-jobs 0), every
# build succeeds, and nothing of the builds made ahead is left in the run folder.
source "$(dirname "$0")/lib.sh"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || skip "nvcc is needed to build the candidates"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
trap 'rm -rf "$WORK"' EXIT
cp -r "$OPTIMAS_SOURCE_DIR/examples/accuracy" "$WORK/app"
run_round() { # NAME JOBS; exit 3: built, nothing measured (--execute no)
  local rc=0
  "$OPTIMAS" run --app "$WORK/app" --import "$OPTIMAS_TEST_DATA/h200/accuracy" --runs-dir "$WORK/$1" --execute no \
    --no-tune --build-jobs "$2" > "$WORK/$1.log" 2>&1 || rc=$?
  [ "$rc" -eq 3 ] || fail "$1: exit $rc, expected 3 (not measured)"$'\n'"$(tail -20 "$WORK/$1.log")"
}
run_round serial 0
run_round ahead 2
s=$(ls -d "$WORK"/serial/*/) a=$(ls -d "$WORK"/ahead/*/)
for c in attempt-1 candidate-2/attempt-1 candidate-3/attempt-1; do
  [ -f "$a/iterations/1/$c/build.json" ] || fail "ahead: no build of $c"$'\n'"$(cat "$WORK/ahead.log")"
  json_check "$a/iterations/1/$c/build.json" 'd["ok"] and d.get("ahead") is True' "ahead: $c was not built ahead"
  json_check "$s/iterations/1/$c/build.json" 'd["ok"] and "ahead" not in d' "serial: $c was built ahead"
  cmp -s "$s/iterations/1/$c/diff.patch" "$a/iterations/1/$c/diff.patch" || fail "$c: other edits than one at a time"
done
grep -q 'made ahead in lane' "$WORK/ahead.log" || fail "ahead: the progress does not say the builds were made ahead"
# runs show sums them (and the serial run has none to sum).
"$OPTIMAS" runs show "$(basename "$a")" --runs-dir "$WORK/ahead" > "$WORK/ahead.show"
grep -qE '^  builds made ahead: 3 variant\(s\), [0-9.]+ s of building; the run waited [0-9.]+ s for them: -?[0-9.]+ s saved$' \
  "$WORK/ahead.show" || fail "ahead: runs show does not sum the builds made ahead"$'\n'"$(cat "$WORK/ahead.show")"
"$OPTIMAS" runs show "$(basename "$s")" --runs-dir "$WORK/serial" | grep -q 'builds made ahead' &&
  fail "serial: runs show says builds were made ahead"
left=$(cd "$a" && ls -d ahead lanes work/ahead-* 2>/dev/null || true)
[ -z "$left" ] || fail "ahead: the builds made ahead left $left"
echo "pipeline_candidates: $(grep -c 'made ahead in lane' "$WORK/ahead.log") candidate builds made ahead"
