# Broken input gets a clear error naming the file and line, and a distinct exit code.
source "$(dirname "$0")/lib.sh"

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
expect_fail 1 'optimas.yml:5: config "a" has no value for \{n\}' -- "$OPTIMAS" profile "$WORK/app" --dry-run

expect_fail 1 'ncu was not found' -- env OPTIMAS_NCU=/nonexistent/ncu "$OPTIMAS" profile "$OPTIMAS_SOURCE_DIR/examples/stream" --no-build -o "$WORK/p"
expect_fail 2 'alpha' -- "$OPTIMAS" profile --import "$OPTIMAS_TEST_DATA/ncu-samples" --alpha 3
pass "bad input"
