# Broken input gets a clear error naming the file and line, and a distinct exit code.
source "$(dirname "$0")/lib.sh"

# --- A configuration's name becomes a path ---------------------------------------------------
# runs/<id>/baseline/runs/<name>.log: the name ../../../../../decoy/victim wrote victim.log and
# victim.stderr.log five folders up, outside the runs folder, over the file already there. The
# host stand-in of the loop's tests runs an A/A measurement (no model, no GPU); the name is
# refused at its line before anything is built or written.
mkdir -p "$WORK/decoy" "$WORK/store"
echo "the user's own file" > "$WORK/decoy/victim.log"
before=$(sha256sum < "$WORK/decoy/victim.log")
cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$WORK/traversal"
sed -i 's|{name: small, |{name: ../../../../../decoy/victim, |' "$WORK/traversal/optimas.yml"
line=$(grep -n 'decoy/victim' "$WORK/traversal/optimas.yml" | cut -d: -f1)
[ -n "$line" ] || fail "the stand-in's config was not renamed"
expect_fail 2 "traversal/optimas.yml:$line: config name takes 1 to 128 letters, digits, .* got \"\.\./\.\./\.\./\.\./\.\./decoy/victim\"" -- \
  "$OPTIMAS" run --app "$WORK/traversal" --runs-dir "$WORK/store/runs" --import "$OPTIMAS_TEST_DATA/h200/stream" \
  --aa --runs 2 --warmup 0 --execute yes
[ "$(sha256sum < "$WORK/decoy/victim.log")" = "$before" ] || fail "victim.log outside the runs folder was overwritten"
[ ! -e "$WORK/decoy/victim.stderr.log" ] || fail "victim.stderr.log was written outside the runs folder"
# A slash or a NUL byte in a name, and -i, --cell and --campaign on the command line.
sed -i 's|{name: ../../../../../decoy/victim, |{name: "sm\\0all", |' "$WORK/traversal/optimas.yml"
expect_fail 2 "traversal/optimas.yml:$line: config name takes .* got \"sm\\\\x00all\"" -- \
  "$OPTIMAS" profile "$WORK/traversal" --dry-run
sed -i 's|{name: "sm\\0all", |{name: sm/all, |' "$WORK/traversal/optimas.yml"
expect_fail 2 "traversal/optimas.yml:$line: config name takes" -- "$OPTIMAS" profile "$WORK/traversal" --dry-run
expect_fail 2 'input.*takes 1 to 128 letters' -- "$OPTIMAS" profile "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" \
  --dry-run -i ../../x
expect_fail 2 '--cell takes 1 to 128 letters' -- "$OPTIMAS" run --app "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" \
  --campaign c --cell ../../x --dry-run
expect_fail 2 '--campaign takes 1 to 128 letters' -- "$OPTIMAS" run --app "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" \
  --campaign .. --cell x --dry-run

# --- Numbers are bounded, at their line or on the command line --------------------------------
mkdir -p "$WORK/wrap"
cp "$OPTIMAS_SOURCE_DIR"/tests/scenario/loop-app/* "$WORK/wrap/"
tail -n 2 "$WORK/wrap/optimas.yml" | grep -q '^measure:$' || fail "the stand-in's optimas.yml no longer ends with measure:"
line=$(($(wc -l < "$WORK/wrap/optimas.yml") + 1))
printf '  warmup: 2147483648\noptimize:\n  iterations: 2\n' >> "$WORK/wrap/optimas.yml"
expect_fail 2 "wrap/optimas.yml:$line: measure\.warmup \(--warmup\) must be at most 100, got 2147483648" -- \
  "$OPTIMAS" run --app "$WORK/wrap" --dry-run
sed -i 's/^  warmup: 2147483648$/  warmup: 1/; s/^  iterations: 2$/  iterations: 1000000000/' "$WORK/wrap/optimas.yml"
expect_fail 2 'wrap/optimas.yml:[0-9]+: optimize\.iterations \(--iterations\) must be at most 100' -- \
  "$OPTIMAS" run --app "$WORK/wrap" --dry-run
expect_fail 2 'measure\.warmup \(--warmup\) must be at most 100, got 2147483648' -- \
  "$OPTIMAS" run --app "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" --warmup 2147483648 --dry-run
expect_fail 2 'optimize\.iterations \(--iterations\) must be a whole number, got "1e9"' -- \
  "$OPTIMAS" run --app "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" --iterations 1e9 --dry-run
sed -i 's/^  iterations: 1000000000$/  iterations: 1/; s/seed: 11}/seed: abc}/' "$WORK/wrap/optimas.yml"
expect_fail 2 'wrap/optimas.yml:[0-9]+: "seed" is the program.s seed' -- "$OPTIMAS" run --app "$WORK/wrap" --dry-run
# A user regex that backtracks for ever on a long line of output.
sed -i 's/seed: abc}/seed: 11}/; s/^  kernel_time: .*/  kernel_time: "kernel_time_ms: ((a+)+)"/' "$WORK/wrap/optimas.yml"
expect_fail 2 'wrap/optimas.yml:[0-9]+: .*catastrophic backtracking' -- "$OPTIMAS" run --app "$WORK/wrap" --dry-run
# A campaign's numbers and names.
mkdir -p "$WORK/camp"
printf 'campaign: c1\napplications: [%s]\niterations: 1e9\n' "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" \
  > "$WORK/camp/c.yml"
expect_fail 2 'c\.yml:3: iterations must be a whole number from 1 to 100, got "1e9"' -- \
  "$OPTIMAS" campaign "$WORK/camp/c.yml" --dry-run
printf 'campaign: c1\napplications:\n  - {path: %s, configs: [../../x]}\n' \
  "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" > "$WORK/camp/c.yml"
expect_fail 2 'c\.yml:3: a configuration takes 1 to 128 letters' -- "$OPTIMAS" campaign "$WORK/camp/c.yml" --dry-run

# --- A raw page cut short --------------------------------------------------------------------
# Cut to 4 lines (header, units, two of the four launches) beside its whole details page.
mkdir -p "$WORK/cut"
cp "$OPTIMAS_TEST_DATA"/ncu-samples/{details_base_name,src_both,session}.csv "$WORK/cut/"
head -n 4 "$OPTIMAS_TEST_DATA/ncu-samples/raw_base.csv" > "$WORK/cut/raw_base.csv"
expect_fail 1 'raw_base\.csv:4: the raw page ends here without a row for result 2 .*truncated file' -- \
  "$OPTIMAS" profile --import "$WORK/cut"
head -n 1 "$OPTIMAS_TEST_DATA/ncu-samples/raw_base.csv" > "$WORK/cut/raw_base.csv"
expect_fail 1 'raw_base\.csv:1: the raw page.s header is followed by no units row' -- \
  "$OPTIMAS" profile --import "$WORK/cut"

mkdir -p "$WORK/trunc"
cp "$OPTIMAS_TEST_DATA/ncu-samples/details_base_name.csv" "$WORK/trunc/"
head -c 100000 "$OPTIMAS_TEST_DATA/ncu-samples/src_both.csv" > "$WORK/trunc/src_both.csv"
expect_fail 1 'src_both\.csv:[0-9]+: .*(truncated|unterminated)' -- "$OPTIMAS" profile --import "$WORK/trunc"

mkdir -p "$WORK/garbage"
head -c 4096 /bin/sh > "$WORK/garbage/details.csv"
expect_fail 1 'no Nsight Compute details or raw page' -- "$OPTIMAS" profile --import "$WORK/garbage"

expect_fail 1 'no such file' -- "$OPTIMAS" profile --import "$WORK/nothing-here"

mkdir -p "$WORK/app"
printf 'name: x\nbuild: {command: "true"}\nrun: {command: "./x {n}"}\nconfigs:\n  - {name: a, m: 3}\n' > "$WORK/app/optimas.yml"
# A mistake in optimas.yml is a usage error (exit 2), named by file and line, in every command
# that reads one.
expect_fail 2 'optimas.yml:5: config "a" has no value for \{n\}' -- "$OPTIMAS" profile "$WORK/app" --dry-run
mkdir -p "$WORK/typo" "$WORK/badvalue" "$WORK/badyaml"
printf 'name: x\nbuild: {command: "true"}\nrun: {command: "./x {n}", timeout: 5}\nconfigs:\n  - {name: a, n: 3}\n' \
  > "$WORK/typo/optimas.yml"
printf 'name: x\nbuild: {command: "true"}\nrun: {command: "./x {n}"}\nconfigs:\n  - {name: a, n: 3}\nmeasure:\n  runs: many\n' \
  > "$WORK/badvalue/optimas.yml"
printf 'name: x\nbuild: {command: "true"\nrun: [\n' > "$WORK/badyaml/optimas.yml"
expect_fail 2 'typo/optimas.yml:3: unknown key "timeout" in run' -- "$OPTIMAS" profile "$WORK/typo" --dry-run
expect_fail 2 'typo/optimas.yml:3: unknown key "timeout" in run' -- "$OPTIMAS" run --app "$WORK/typo" --dry-run
expect_fail 2 'badvalue/optimas.yml:7: .*runs' -- "$OPTIMAS" run --app "$WORK/badvalue" --dry-run
expect_fail 2 'badyaml/optimas.yml:[0-9]+: ' -- "$OPTIMAS" run --app "$WORK/badyaml" --dry-run
expect_fail 2 'typo/optimas.yml:3: unknown key' -- "$OPTIMAS" prompt "$OPTIMAS_TEST_DATA/h200/stream" --app "$WORK/typo"
expect_fail 2 'nothing-here.*(cannot open|not exist|no such)' -- "$OPTIMAS" run --app "$WORK/nothing-here" --dry-run
# run --config (and -c) is the deprecated spelling of --app: it still works, and says so in one line.
expect_fail 2 'typo/optimas.yml:3: unknown key "timeout" in run' -- "$OPTIMAS" run --config "$WORK/typo" --dry-run
expect_fail 2 '^warning: -c,--config is deprecated: use --app$' -- "$OPTIMAS" run -c "$WORK/typo" --dry-run
# A bad setting reads the same from the command line as from optimas.yml (config/options.cpp).
mkdir -p "$WORK/badtol"
sed 's/^validate:.*//' "$OPTIMAS_SOURCE_DIR/examples/stream/optimas.yml" > "$WORK/badtol/optimas.yml"
cp "$OPTIMAS_SOURCE_DIR"/examples/stream/*.cu "$WORK/badtol/"
printf 'validate:\n  tolerance: {rel: -1}\n' >> "$WORK/badtol/optimas.yml"
tol_msg='validate\.tolerance \(--tolerance\) rel needs a number at least 0 \(rel=X\), got "rel=-1"'
expect_fail 2 "badtol/optimas.yml:[0-9]+: $tol_msg" -- "$OPTIMAS" run --app "$WORK/badtol" --dry-run
expect_fail 2 "$tol_msg" -- "$OPTIMAS" run --app "$OPTIMAS_SOURCE_DIR/examples/stream" --tolerance rel=-1 --dry-run

expect_fail 1 'ncu was not found' -- env OPTIMAS_NCU=/nonexistent/ncu "$OPTIMAS" profile "$OPTIMAS_SOURCE_DIR/examples/stream" --no-build -o "$WORK/p"
expect_fail 2 'alpha' -- "$OPTIMAS" profile --import "$OPTIMAS_TEST_DATA/ncu-samples" --alpha 3
# A byte that is not UTF-8 in a kernel name (every page that names it) and the session page:
# --json output writes it as \xff instead of failing.
mkdir -p "$WORK/latin1"
cp "$OPTIMAS_TEST_DATA"/ncu-samples/*.csv "$WORK/latin1/"
sed -i 's/dloop/dl\xffoop/g' "$WORK/latin1"/*.csv
sed -i 's/NVIDIA H200/NVIDIA H200\xe9/' "$WORK/latin1/session.csv"
"$OPTIMAS" profile --import "$WORK/latin1" --json > "$WORK/latin1.json" 2> "$WORK/latin1.log" ||
  fail "import with a non-UTF-8 kernel name: $(cat "$WORK/latin1.log")"
grep -qF 'dl\\xffoop' "$WORK/latin1.json" || fail "the kernel name is not in the JSON as dl\\xffoop"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/latin1.json" || fail "--json printed invalid JSON"
"$OPTIMAS" analyze "$WORK/latin1" --json > "$WORK/latin1-analyze.json" 2> "$WORK/latin1.log" ||
  fail "analyze with a non-UTF-8 kernel name: $(cat "$WORK/latin1.log")"
# A compressed source page that unpacks to one 200 MB line (it took 6.2 GB): an error naming
# the page and line, in bounded memory. The page is made here, not committed.
mkdir -p "$WORK/bomb"
cp "$OPTIMAS_TEST_DATA/ncu-samples/details_base_name.csv" "$WORK/bomb/"
python3 - "$OPTIMAS_TEST_DATA/ncu-samples/src_both.csv" "$WORK/bomb/src_both.csv.gz" <<'PY'
import gzip, sys
head = b"".join(open(sys.argv[1], "rb").readlines()[:3])
with gzip.open(sys.argv[2], "wb", 1) as f:
    f.write(head)
    for _ in range(200):
        f.write(b"1," * (512 * 1024))
    f.write(b"\n")
PY
[ "$(stat -c %s "$WORK/bomb/src_both.csv.gz")" -lt 4000000 ] || fail "the bomb is not small"
expect_fail 1 'src_both\.csv\.gz:4: a record of more than [0-9]+ fields' -- \
  /usr/bin/time -f 'max_rss_kb %M' -o "$WORK/bomb.rss" "$OPTIMAS" profile --import "$WORK/bomb"
rss=$(awk '/max_rss_kb/ {print $2}' "$WORK/bomb.rss")
[ "$rss" -lt 400000 ] || fail "reading the bomb took $rss KB"
echo "a page of one 200 MB line: refused, max RSS $rss KB"

pass "bad input"
