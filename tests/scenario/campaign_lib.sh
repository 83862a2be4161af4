# Shared by the campaign scenario tests (campaign_local.sh here; a Slurm one runs the same
# campaign with `launcher: slurm` and compares tables). Needs lib.sh sourced first.
#
#   campaign_apps DIR                  the host stand-ins in DIR/apps: stream (tests/scenario/loop-app)
#                                      and flaky (the same, whose build fails the first time any
#                                      of its cells builds, leaving the folder DIR/flaky-failed-once)
#   campaign_file FILE RUNS LAUNCHER [OPTIONS]
#                                      the scenario's campaign: 2 applications x 2 subsets (pc+roofline,
#                                      code-only) x 2 backends (builtin, manual) = 8 cells into the run
#                                      store RUNS, with that launcher and its options as a YAML mapping
#                                      ("{jobs: 2}"); the recorded H200 profile of stream stands in for
#                                      profiling. FILE must lie in the DIR given to campaign_apps.
#   campaign_answer RUNS               answers every prompt the manual cells wait on with the honest
#                                      edit of the stand-in (one repetition of triad instead of 8,
#                                      citing PC1 and RF1); prints how many it answered
#   campaign_stable_table RUNS ID      the table as JSON without what timings decide (generated,
#                                      speedup, accepted_rate, seconds_per_run), for comparing two
#                                      launchers' tables
: "${OPTIMAS_TEST_DATA:?source lib.sh first}"

CAMPAIGN_ID=scenario-ablation

campaign_apps() {
  local dir=$1
  mkdir -p "$dir/apps"
  cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$dir/apps/stream"
  cp -r "$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app" "$dir/apps/flaky"
  python3 - "$dir/apps/flaky/optimas.yml" "$dir/flaky-failed-once" <<'PY'
import sys
path, mark = sys.argv[1], sys.argv[2]
text = open(path).read()
old = "  command: g++ -O2 -x c++ -o stream main.cu\n"
assert old in text, "the stand-in's build command changed"
# mkdir, not test-then-touch: two flaky cells build at once under {jobs: 2}, and only one
# mkdir of the mark can succeed, so exactly one build fails (both did once in CI).
new = "  command: 'mkdir %s 2>/dev/null && { echo failing once on purpose >&2; exit 1; }; g++ -O2 -x c++ -o stream main.cu'\n" % mark
open(path, "w").write(text.replace(old, new))
PY
}

campaign_file() {
  local file=$1 runs=$2 launcher=$3 options=${4:-"{}"}
  cat > "$file" <<EOF
campaign: $CAMPAIGN_ID
applications: [apps/stream, apps/flaky]
diagnostics: [pc+roofline, code-only]
backends: [builtin, manual]
repeats: 1
iterations: 1
run_options: [--no-tune, --import, $OPTIMAS_TEST_DATA/h200/stream, --runs, "5", --retries, "0"]
runs_dir: $runs
gpus: 0
time_limit: 10m
requeue: 2
launcher: {name: $launcher, options: $options}
EOF
}

campaign_answer() {
  python3 - "$1/campaigns/$CAMPAIGN_ID/manual" <<'PY'
import glob, json, os, sys
edit = {"file": "main.cu", "kernel": "triad_kernel", "find": "for (int r = 0; r < 8; ++r) {",
        "replace": "for (int r = 0; r < 1; ++r) {", "line_start": None, "line_end": None, "new_text": None,
        "evidence": ["PC1", "RF1"], "rationale": "triad repeats the same work eight times; once gives the same bits.",
        "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}
reply = json.dumps({"summary": "triad does its work eight times", "edits": [edit], "withheld": []})
answered = 0
for prompt in glob.glob(os.path.join(sys.argv[1], "*", "prompt-*.md")):
    answer = prompt.replace("/prompt-", "/reply-")
    if not os.path.exists(answer):
        open(answer, "w").write(reply)
        answered += 1
print(answered)
PY
}

campaign_stable_table() {
  "$OPTIMAS" campaign table "$2" --runs-dir "$1" --format json | python3 -c '
import json, sys
t = json.load(sys.stdin)
t.pop("generated", None)
for r in t["rows"]:
    r.pop("speedup", None)
    r.pop("accepted_rate", None)
    r.pop("seconds_per_run", None)
print(json.dumps(t, indent=1, sort_keys=True))'
}
