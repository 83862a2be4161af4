# On a GPU (label "gpu"; skipped elsewhere): optimas init on examples of ours, each in a fresh copy
# without its optimas.yml, run the way a user runs it (in the folder, relative paths, the
# program's arguments after --). With real runs and the kernel tracer, init must find what the
# hand-written optimas.yml says: the printed kernel time (matched against the trace, per run or
# per call), the output, exact validation; and the file it writes must load.
source "$(dirname "$0")/lib.sh"

command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU || skip "no NVIDIA GPU here"
command -v nvcc >/dev/null || skip "nvcc not on PATH"

for ex in ${OPTIMAS_GPU_INIT_EXAMPLES:-stencil spmv edges windows}; do
  cp -r "$OPTIMAS_SOURCE_DIR/examples/$ex" "$WORK/$ex"
  rm -f "$WORK/$ex/optimas.yml"
  # The small config's arguments, from the hand-written file.
  args=$(python3 - "$OPTIMAS_SOURCE_DIR/examples/$ex/optimas.yml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
cmd = re.search(r"^  command: (\./.*)$", text, re.M).group(1)
small = re.search(r"\{name: small,([^}]*)\}", text).group(1)
for kv in small.split(","):
    k, v = (s.strip() for s in kv.split(":"))
    cmd = cmd.replace("{" + k + "}", v)
print(cmd.replace("{output}", "result.out"))
PY
)
  (cd "$WORK/$ex" && "$OPTIMAS" init --json -- $args > "$WORK/$ex.json") || fail "$ex: init failed: $(cat "$WORK/$ex.json")"
  cat "$WORK/$ex/optimas.yml"
  python3 - "$OPTIMAS_SOURCE_DIR/examples/$ex/optimas.yml" "$WORK/$ex/optimas.yml" "$WORK/$ex.json" <<'PY' || fail "$ex: init's file differs in substance"
import json, re, sys
mine, theirs, result = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
def kernel_time(text):
    m = re.sub(r"\s+#.*$", "", re.search(r"^  kernel_time: (.*)$", text, re.M).group(1))
    return re.sub(r"'?\{iters\}'?", "{iters}", m.replace("'", ""))
assert result["built"] and result["runs"] == 3, result
assert result["dry_run"]["ok"], result["dry_run"]
assert kernel_time(mine) == kernel_time(theirs), (kernel_time(mine), kernel_time(theirs))
assert "not compared with a kernel trace" not in theirs, "the kernel time was not matched against the trace"
assert "--out {output}" in re.search(r"^  command: (\./.*)$", theirs, re.M).group(1)
assert any("same bytes in all 3 runs" in f for f in result["findings"]), result["findings"]
assert any("kernel(s)" in f and "launches" in f for f in result["findings"]), result["findings"]
print("ok:", sys.argv[2])
PY
done
