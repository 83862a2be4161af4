# optimas optimize with the builtin backend on every recorded example: every edit cites
# evidence and the variant compiles with nvcc; crafted replies that change a signature or
# duplicate a kernel are rejected with their reason; the user's tree is never touched.
source "$(dirname "$0")/lib.sh"

NVCC_OK=0
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then NVCC_OK=1; export PATH="$PATH:/usr/local/cuda/bin"; fi
cp -r "$OPTIMAS_SOURCE_DIR/examples" "$WORK/examples"
before=$(cd "$WORK/examples" && find . -type f -exec sha256sum {} + | sort | sha256sum)
for dir in "$OPTIMAS_TEST_DATA"/h200/*/; do
  ex=$(basename "$dir")
  if [ "$ex" = windows ]; then
    # Its real profile says compute-bound, stall_math_pipe_throttle on an integer modulo: no
    # rule of the builtin fits (issue #14), and it says so instead of editing.
    rc=0
    "$OPTIMAS" -q optimize "$dir" --app "$WORK/examples/$ex" -o "$WORK/out-$ex" --json > "$WORK/$ex.json" || rc=$?
    [ $rc -eq 3 ] || fail "windows: optimize without an applicable rule exits $rc, expected 3"
    json_check "$WORK/$ex.json" 'd["applied"] == 0 and d["outcomes"] == []' "windows: no edit without a rule"
    continue
  fi
  args=()
  [ $NVCC_OK = 1 ] && args+=(--compile)
  "$OPTIMAS" -q optimize "$dir" --app "$WORK/examples/$ex" -o "$WORK/out-$ex" --json "${args[@]}" > "$WORK/$ex.json" \
    || fail "$ex: optimize failed: $(cat "$WORK/$ex.json")"
  json_check "$WORK/$ex.json" 'd["accepted"] and d["applied"] >= 1 and d["not_applied"] == 0' "$ex: accepted edits"
  json_check "$WORK/$ex.json" 'all(o["evidence"] and not o["unknown_evidence"] for o in d["outcomes"])' "$ex: every edit cites known evidence"
  [ $NVCC_OK = 1 ] && json_check "$WORK/$ex.json" 'd["compiled"] is True' "$ex: the variant compiles"
  [ -s "$WORK/out-$ex/diff.patch" ] || fail "$ex: no diff"
  # accuracy's PC1 waits on the load of the line above it, in the same loop (issue #50's done-when):
  # loads_in_flight acts on it, and the edits address at least half of the stalled samples.
  [ "$ex" = accuracy ] && json_check "$WORK/$ex.json" \
    'd["time_addressed"] >= 0.5 and any(o["rule"] == "loads_in_flight" and o["applied"] for o in d["outcomes"])' \
    "accuracy: loads_in_flight addresses at least half the stalled samples"
done
after=$(cd "$WORK/examples" && find . -type f -exec sha256sum {} + | sort | sha256sum)
[ "$before" = "$after" ] || fail "optimize changed the application's own folder"

# Crafted replies through the manual backend: the guardrails reject them, saying why.
D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$WORK/examples/stream"
cd "$WORK"
expect_fail 4 'save the whole answer' -- "$OPTIMAS" optimize "$D" --app "$APP" -m manual --work-dir chat -o crafted
reply=$(ls chat | sed -n 's/^prompt-\(.*\)\.md$/chat\/reply-\1.md/p')
edit() { # find replace
  printf '{"summary": "", "withheld": [], "edits": [{"file": "main.cu", "kernel": "triad_kernel", "find": %s, "replace": %s, "line_start": null, "line_end": null, "new_text": null, "evidence": ["PC1"], "rationale": "r", "expected_effect": []}]}' "$1" "$2" > "$reply"
}
edit '"double scalar, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i]"' '"float scalar, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i]"'
expect_fail 1 'REJECTED \(signature\).*triad_kernel changed' -- "$OPTIMAS" optimize "$D" --app "$APP" -m manual --work-dir chat -o crafted
edit '"__global__ void triad_kernel("' '"__global__ void triad_kernel(double* a, const double* b, const double* c, double scalar, int n) { }\n__global__ void triad_kernel("'
expect_fail 1 'REJECTED \(duplicate_kernel\)' -- "$OPTIMAS" optimize "$D" --app "$APP" -m manual --work-dir chat -o crafted
edit '"this text is not in the file"' '"x"'
rc=0
"$OPTIMAS" optimize "$D" --app "$APP" -m manual --work-dir chat -o crafted > crafted.txt 2>&1 || rc=$?
grep -q 'NOT applied: the text to find does not occur in main.cu' crafted.txt || fail "a hallucinated edit is recorded: $(cat crafted.txt)"
# Nothing applied is no success (it exited 0 before).
[ "$rc" -eq 3 ] || fail "optimize with nothing applied: exit $rc, expected 3"
grep -q 'no edit was applied' crafted.txt || fail "optimize does not say nothing was applied: $(cat crafted.txt)"
# optimize.scope: file in optimas.yml (optimize once ignored it): the prompt shows the host function
# that launches the hot kernels, and an edit of its launch configuration is applied; --scope kernel
# over it refuses that edit, and its prompt shows no host code.
printf 'optimize:\n  scope: file\n' | cat "$APP/optimas.yml" - > "$APP/file.yml"
expect_fail 4 'save the whole answer' -- "$OPTIMAS" optimize "$D" --app "$APP/file.yml" -m manual --work-dir scope -o scoped
grep -q 'host function run_rep' scope/prompt-*.md || fail "scope file: the prompt does not show run_rep"
reply=$(ls scope | sed -n 's/^prompt-\(.*\)\.md$/scope\/reply-\1.md/p')
edit '"copy_kernel<<<blocks, TPB>>>(d_a, d_c, n);"' '"copy_kernel<<<blocks, TPB, 0>>>(d_a, d_c, n);"'
"$OPTIMAS" optimize "$D" --app "$APP/file.yml" -m manual --work-dir scope -o scoped > scoped.txt 2>&1 \
  || fail "scope file: the launch edit was refused: $(cat scoped.txt)"
grep -q 'copy_kernel<<<blocks, TPB, 0>>>' scoped/variant/main.cu || fail "scope file: the launch edit is not in the variant"
expect_fail 4 'save the whole answer' -- "$OPTIMAS" optimize "$D" --app "$APP/file.yml" --scope kernel -m manual --work-dir scope -o kernel-scoped
for p in scope/prompt-*.md; do
  r="scope/reply-${p#scope/prompt-}"
  [ -e "$r" ] || { grep -q 'run_rep' "$p" && fail "--scope kernel: the prompt shows host code"; cp "$reply" "$r"; }
done
expect_fail 1 'REJECTED \(scope\)' -- "$OPTIMAS" optimize "$D" --app "$APP/file.yml" --scope kernel -m manual --work-dir scope -o kernel-scoped
# A source outside the application folder (an absolute path) is a usage error: the variant was
# once written over that file.
mkdir -p "$WORK/mine" && cp "$APP/main.cu" "$WORK/mine/main.cu"
sed "s|^sources: .*|sources: [$WORK/mine/main.cu]|" "$APP/optimas.yml" > "$APP/abs.yml"
mine_before=$(sha256sum < "$WORK/mine/main.cu")
expect_fail 2 'is not inside the application folder' -- "$OPTIMAS" optimize "$OPTIMAS_TEST_DATA/h200/stream" --app "$APP/abs.yml" -o abs-out
[ "$(sha256sum < "$WORK/mine/main.cu")" = "$mine_before" ] || fail "optimize changed a file outside the application"
pass "optimize on $(ls -d "$OPTIMAS_TEST_DATA"/h200/*/ | wc -l) examples; crafted replies rejected"
