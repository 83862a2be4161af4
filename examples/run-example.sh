#!/usr/bin/env bash
# run-example.sh: run one example with the parameters of one config from its
# optimas.yml, without Optimas.  The binary must be built in the example's
# folder first, by hand (its README says how; build-all.sh builds in copies).
# Usage: examples/run-example.sh <example> [config-name] [output-file]
#        (config defaults to the one marked default: true; output to the yml's run.output)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="${1:?usage: run-example.sh <example> [config] [output]}"
yml="$here/$name/optimas.yml"
[[ -f "$yml" ]] || { echo "run-example: no $yml" >&2; exit 1; }

cmd="$(sed -n '/^run:/,/^[^[:space:]#]/{s/^[[:space:]]*command:[[:space:]]*//p}' "$yml" | head -n 1)"
out_default="$(sed -n '/^run:/,/^[^[:space:]#]/{s/^[[:space:]]*output:[[:space:]]*\([^[:space:]#]*\).*/\1/p}' "$yml" | head -n 1)"
if [[ -n "${2:-}" ]]; then
  line="$(grep -E "^[[:space:]]*- \{name:[[:space:]]*$2[[:space:]]*," "$yml" | head -n 1)"
else
  line="$(grep -E '^[[:space:]]*- \{.*default:[[:space:]]*true' "$yml" | head -n 1)"
fi
[[ -n "$line" ]] || { echo "run-example: config '${2:-default}' not found in $yml" >&2; exit 1; }

# "{name: small, n: 4194304, reps: 5}" -> substitute {n}, {reps}, ...
body="${line#*\{}"
body="${body%\}*}"
IFS=',' read -r -a pairs <<< "$body"
for pair in "${pairs[@]}"; do
  key="$(echo "${pair%%:*}" | tr -d '[:space:]')"
  value="$(echo "${pair#*:}" | tr -d '[:space:]')"
  cmd="${cmd//\{$key\}/$value}"
done
cmd="${cmd//\{output\}/${3:-$out_default}}"
if [[ "$cmd" == *"{"*"}"* ]]; then
  echo "run-example: unfilled placeholder in: $cmd" >&2
  exit 1
fi
echo "run-example: [$name] $cmd"
cd "$here/$name"
exec bash -c "$cmd"
