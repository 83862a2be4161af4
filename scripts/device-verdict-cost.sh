#!/usr/bin/env bash
# On a GPU machine, from the repository root, with optimas packed by scripts/device-pack.sh: what
# one variant's verdict costs with today's rule and with the fast one (issue #27), on programs
# as a user runs them. For each program, A/A runs (a second build of the unchanged baseline,
# nothing asked), one per rule of RULES: `fixed` is `--verdict fixed --end-after-kernels off`
# (whole runs, the rule before issue #27), `sequential` is `--verdict sequential
# --end-after-kernels auto`, `default` is no such flag (optimas.yml's measure settings or the
# defaults); later runs import the first's profile, and none tunes. Prints, per program and rule, the variant's validate, measure and confirm
# seconds (run.json's times), its verdict and how many measured runs ended early; the table and
# every run.json go to $OUT/verdict-cost-$TAG.tgz, rewritten after each program.
#   PROGRAMS "DIR:NAME[:CONFIGS[:PROFILE]] ..." (default: examples stream, rows, windows, heat on
#            their default configuration), each DIR holding NAME/optimas.yml; PROFILE, a recorded
#            profile (e.g. tests/data/h200/stream) both runs import instead of profiling
#   EXTRA    more arguments for both runs (e.g. --real: ask the builtin instead of --aa)
#   TAG      names this set's folder and archive (default aa), so two sets can share one call
#   RULES    the rules, in order (default "fixed sequential")
set -uo pipefail
OUT=${OUT:-/tmp/optimas-verdict-cost-out}
TAG=${TAG:-aa}
R=/tmp/optimas-verdict-cost-$TAG
rm -rf "$R"; mkdir -p "$R" "$OUT"
root=$PWD
source "$root/scripts/device-lib.sh"
device_env "$root"
save() { save_results "$R" "$OUT/verdict-cost-$TAG.tgz"; }
echo "| program | rule | validate s | measure s | confirm s | verdict | measured runs | ended early |" > "$R/table.md"
echo "|---|---|---|---|---|---|---|---|" >> "$R/table.md"
extra=${EXTRA:-}
aa=(--aa)
[[ " ${EXTRA:-} " == *" --real "* ]] && aa=()
for entry in ${PROGRAMS:-examples:stream:default examples:rows:default examples:windows:default examples:heat:default}; do
  IFS=: read -r dir name configs recorded <<<"$entry"
  work="$R/$name"
  mkdir -p "$work"
  cp -r "$root/$dir/$name" "$work/$name"
  cfg=()
  [ -n "$configs" ] && cfg=(--measure-configs "$configs" --validate-configs "$configs")
  profile=()
  [ -n "$recorded" ] && profile=(--import "$root/$recorded")
  for rule in ${RULES:-fixed sequential}; do
    case $rule in
    fixed) flags=(--verdict fixed --end-after-kernels off) ;;
    sequential) flags=(--verdict sequential --end-after-kernels auto) ;;
    default) flags=() ;;
    *) echo "unknown rule $rule (fixed, sequential, default)" >&2; exit 2 ;;
    esac
    start=$(date +%s)
    rc=0
    (cd "$work" && optimas run --app "$name" "${aa[@]}" --no-tune "${flags[@]}" \
      "${cfg[@]}" "${profile[@]}" ${extra//--real/} > "$work/$rule.out" 2> "$work/$rule.log") || rc=$?
    id=$(ls -t "$work/runs" 2>/dev/null | grep -E '^[0-9a-f-]{36}$' | head -1)
    echo "[$(date +%T)] $name $rule: exit $rc in $(( $(date +%s) - start )) s (run $id)"
    [ -n "$id" ] || { tail -5 "$work/$rule.log"; continue; }
    cp "$work/runs/$id/run.json" "$work/$rule.run.json"
    [ ${#profile[@]} -eq 0 ] && profile=(--import "runs/$id/profile")
    python3 - "$work/runs/$id" "$name" "$rule" >> "$R/table.md" <<'PY'
import glob, json, os, sys
run, name, rule = sys.argv[1:]
for result in sorted(glob.glob(run + "/iterations/*/attempt-*/result.json")):
    r = json.load(open(result))
    t = r.get("times", {})
    m = r.get("measurement", {})
    ends = sum(c.get("ended_early", 0) for c in m.get("end_after_kernels", {}).values())
    runs = 0
    journal = os.path.join(os.path.dirname(result), "measurements.jsonl")
    if os.path.exists(journal):
        runs = sum(1 for _ in open(journal))
    # Rounds the sequential rule took from the validation runs (not in the journal).
    seeded = m.get("from_validation", 0)
    print(f"| {name} | {rule} | {t.get('validate_s', 0):.1f} | {t.get('measure_s', 0):.1f} | "
          f"{t.get('confirm_s', 0):.1f} | {r.get('status', '?')}: {m.get('verdict', '?')} {m.get('speedup', 0):.4f}x | "
          f"{runs}{f' (+{seeded} validation a side)' if seeded else ''} | {ends} |")
PY
    save
  done
done
cat "$R/table.md"
save
