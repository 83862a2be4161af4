# Shared by the scenario tests: run the real optimas binary, check what it prints.
set -euo pipefail

: "${OPTIMAS:?set OPTIMAS to the optimas binary (ctest does)}"
: "${OPTIMAS_SOURCE_DIR:?set OPTIMAS_SOURCE_DIR to the repository root (ctest does)}"
: "${OPTIMAS_TEST_DATA:=$OPTIMAS_SOURCE_DIR/tests/data}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/optimas-scenario-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# python3 called by its own path: a launcher in front of it (pyenv's shim takes 0.3 s a call)
# would cost minutes over the thousands of calls of the tests and of fake-ncu.
if py=$(python3 -c 'import sys; print(sys.executable)') && [ -x "$py" ]; then
  mkdir "$WORK/.python"
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$py" > "$WORK/.python/python3"
  chmod +x "$WORK/.python/python3"
  PATH="$WORK/.python:$PATH"
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 125; }
pass() { echo "PASS: $*"; }

# json_check FILE PYTHON-EXPRESSION [MESSAGE]: the expression sees the parsed file as `d`.
json_check() {
  python3 - "$1" "$2" "${3:-$2}" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2], {"d": d})
if not ok:
    print("FAIL: " + sys.argv[3], file=sys.stderr)
    sys.exit(1)
PY
}

# expect_fail EXIT-CODE OUTPUT-PATTERN -- COMMAND...: the command fails with that code and says that.
expect_fail() {
  local code=$1 pattern=$2
  shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -eq "$code" ] || fail "expected exit $code, got $rc from: $*"$'\n'"$out"
  # A here-string, not a pipe: under pipefail, `echo | grep -q` fails when grep, done early, closes the pipe first.
  grep -qE -- "$pattern" <<<"$out" || fail "expected /$pattern/ in the output of: $*"$'\n'"$out"
}

# fake_ncu_recorded DIR: tests/scenario/fake-ncu serves the pages of a profile recorded on the
# H200 (DIR: a configuration's folder of one, e.g. h200/stream/default), its timing pass and its
# heavy pass, from $WORK/pages; what it is asked is logged in $WORK/ncu.log.
fake_ncu_recorded() {
  export FAKE_NCU_DATA="$WORK/pages" FAKE_NCU_LOG="$WORK/ncu.log"
  mkdir -p "$FAKE_NCU_DATA/timing" "$FAKE_NCU_DATA/heavy"
  for p in details raw source session; do gunzip -c "$1/$p.csv.gz" > "$FAKE_NCU_DATA/heavy/$p.csv"; done
  gunzip -c "$1/timing_raw.csv.gz" > "$FAKE_NCU_DATA/timing/raw.csv"
}

# fake_ncu_pages: the pages tests/scenario/fake-ncu serves for a heavy pass, from the recorded
# samples, into $FAKE_NCU_DATA/heavy (the caller writes its own timing page into $FAKE_NCU_DATA/timing).
fake_ncu_pages() {
  local s="$OPTIMAS_TEST_DATA/ncu-samples"
  mkdir -p "$FAKE_NCU_DATA/timing" "$FAKE_NCU_DATA/heavy"
  cp "$s/details_base_name.csv" "$FAKE_NCU_DATA/heavy/details.csv"
  cp "$s/raw_base.csv" "$FAKE_NCU_DATA/heavy/raw.csv"
  cp "$s/src_both.csv" "$FAKE_NCU_DATA/heavy/source.csv"
  cp "$s/session.csv" "$FAKE_NCU_DATA/heavy/session.csv"
}
