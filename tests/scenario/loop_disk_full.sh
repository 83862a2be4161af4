# A disk that fills up during optimas run: the error names the run and says what to do, the
# half-made scratch copy is removed so the space comes back, `runs list` works, and once there
# is room again --resume finishes the run. (Before, the scratch copy stayed, the disk stayed
# full, and `runs list` and --resume failed with "disk I/O error".)
# The run folder is a 500 KB tmpfs in a mount namespace of this test's own: as root, or through
# a user namespace; where neither is allowed, the test skips.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"
command -v unshare >/dev/null || skip "unshare (util-linux) makes the small disk"
if unshare -m true 2> /dev/null; then
  namespace=(unshare -m)
elif unshare -Urm true 2> /dev/null; then
  namespace=(unshare -Urm)
else
  skip "no mount namespace can be made here (needs root or user namespaces)"
fi
D="$OPTIMAS_TEST_DATA/h200/stream"

# 300 KB of data next to the sources: the snapshot fits on the disk, the baseline's copy does not.
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
head -c 300000 /dev/zero > "$WORK/app/data.bin"
mkdir "$WORK/runs"
cat > "$WORK/inside.sh" <<'EOF'
# In the namespace: what the test checks is written next to the run folder, which the mount hides.
mount -t tmpfs -o size=500k tmpfs "$WORK/runs" || exit 125
cd "$WORK"
rc=0
"$OPTIMAS" run --app app --runs-dir runs --import "$D" --runs 2 --warmup 0 --fresh-seeds 0 \
  --cache-dir "$WORK/cache" > full.out 2> full.log || rc=$?
echo "$rc" > full.rc
id=$(ls runs | grep -E '^[0-9a-f-]{36}$' | head -1)
echo "$id" > id
[ -e "runs/$id/work" ] && find "runs/$id/work" > work.left
rc=0
"$OPTIMAS" runs list --runs-dir runs --json > list.json 2> list.log || rc=$?
echo "$rc" > list.rc
# Room again: the resumed run finishes.
mount -o remount,size=64m "$WORK/runs"
rc=0
"$OPTIMAS" run --resume "$id" --runs-dir runs > resume.out 2> resume.log || rc=$?
echo "$rc" > resume.rc
cp "runs/$id/run.json" run.json
[ -e "runs/$id/work" ] && find "runs/$id/work" > work.after
exit 0
EOF
rc=0
WORK="$WORK" D="$D" "${namespace[@]}" bash "$WORK/inside.sh" || rc=$?
[ "$rc" -ne 125 ] || skip "no tmpfs can be mounted in the namespace"
[ "$rc" -eq 0 ] || fail "the test's own script failed ($rc)"

id=$(cat "$WORK/id")
[ -n "$id" ] || fail "no run folder was made: $(cat "$WORK/full.log")"
[ "$(cat "$WORK/full.rc")" = 1 ] || fail "the run on a full disk: exit $(cat "$WORK/full.rc"), expected 1: $(cat "$WORK/full.log")"
grep -q "run $id: the disk is full (No space left on device) while copying .* into $WORK/runs/$id/work/baseline; the partial copy was removed: free some space there, then resume the run" "$WORK/full.log" ||
  fail "the error does not name the run, the disk and what to do: $(cat "$WORK/full.log")"
[ ! -e "$WORK/work.left" ] || fail "the scratch copy stayed on the full disk: $(cat "$WORK/work.left")"
[ "$(cat "$WORK/list.rc")" = 0 ] || fail "runs list after the full disk: $(cat "$WORK/list.log")"
json_check "$WORK/list.json" "[(r['id'], r['status']) for r in d] == [('$id', 'failed')]" \
  "runs list shows the run as failed: $(cat "$WORK/list.json")"
[ "$(cat "$WORK/resume.rc")" = 0 ] || [ "$(cat "$WORK/resume.rc")" = 3 ] ||
  fail "the resumed run: exit $(cat "$WORK/resume.rc"): $(cat "$WORK/resume.log")"
json_check "$WORK/run.json" 'd["status"] == "finished"' "the resumed run did not finish: $(cat "$WORK/resume.log")"
[ ! -e "$WORK/work.after" ] || fail "the finished run kept its scratch copies"
pass "a full disk: a clear error naming the run, no half copy left, runs list works, and the run resumes once there is room"
