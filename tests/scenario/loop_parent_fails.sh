# The parent failing while being measured (its build gone, a GPU fault, a full disk) is not the
# variant's doing: the run stops there, resumable, instead of recording the variant as failed
# (and every later one the same way). An A/A run of the host stand-in whose baseline copy fails
# its measurement runs (the output path names them) while $WORK/broken exists; after it is
# removed, --resume measures the variant.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/app"
cat > "$WORK/app/run.sh" <<SH
#!/bin/sh
case "\$PWD" in
  */work/baseline)
    for a in "\$@"; do
      case "\$a" in *measure-*-baseline-*) [ -e "$WORK/broken" ] && { echo "the GPU fell off the bus" >&2; exit 3; } ;; esac
    done ;;
esac
exec ./stream "\$@"
SH
chmod +x "$WORK/app/run.sh"
sed -i 's|^  command: ./stream |  command: ./run.sh |' "$WORK/app/optimas.yml"
grep -q 'command: ./run.sh' "$WORK/app/optimas.yml" || fail "the run command was not changed"
touch "$WORK/broken"

cd "$WORK"
rc=0
# --sandbox watch: the stand-in reads $WORK/broken, which the walls' private /tmp would hide.
"$OPTIMAS" run --app app --import "$D" --aa --runs 5 --warmup 0 --no-tune --runs-dir runs --sandbox watch \
  > run.out 2> run.log || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] || fail "the run exits $rc, as if it had measured: $(tail -5 run.log)"
grep -q "the baseline failed while being measured on default beside i1a1: .*this is not i1a1's fault" run.log ||
  fail "the run does not say the parent failed: $(tail -5 run.log)"
hint=$(grep -o 'continue with `[^`]*`' run.log | tail -1 | sed 's/^continue with `//; s/`$//')
[ -n "$hint" ] || fail "the stopped run does not say how to continue: $(tail -5 run.log)"
id=$(ls runs | grep -E '^[0-9a-f-]{36}$')
json_check "runs/$id/run.json" 'd["status"] == "failed" and not any(v.get("status") == "run_failed" for v in d.get("variants", []))' \
  "the variant was blamed: $(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(d["status"], [(v["key"], v["status"]) for v in d.get("variants", [])])' "runs/$id/run.json")"

rm "$WORK/broken"
rc=0
eval "\"\$OPTIMAS\" ${hint#optimas }" > run.out 2> run.log || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "the resumed run exits $rc: $(tail -5 run.log)"
json_check "runs/$id/run.json" 'd["status"] == "finished" and [(v["key"], "measurement" in v) for v in d["variants"]] == [("i1a1", True)]' \
  "the resumed run did not measure the variant: $(tail -5 run.log)"

pass "a parent that fails while being measured stops the run, resumable, and the variant is measured on resume"
