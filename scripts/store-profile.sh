#!/usr/bin/env bash
# Stores a profile directory written by `optimas profile` as test data, the way tests/data/h200
# was made: the CSV pages compressed with `gzip -9n` and renamed in manifest.json, the .ncu-rep
# reports and the program's output left out; what optimas printed goes beside them.
# Usage: scripts/store-profile.sh RECORDED_DIR DEST_DIR [SUMMARY_TXT [PROGRESS_TXT]]
set -euo pipefail
src=${1:?usage: store-profile.sh RECORDED_DIR DEST_DIR [SUMMARY_TXT [PROGRESS_TXT]]}
dest=${2:?usage: store-profile.sh RECORDED_DIR DEST_DIR [SUMMARY_TXT [PROGRESS_TXT]]}
[ -f "$src/manifest.json" ] || { echo "store-profile: $src/manifest.json not found" >&2; exit 1; }
[ ! -e "$dest" ] || { echo "store-profile: $dest exists already" >&2; exit 1; }
mkdir -p "$dest"
(cd "$src" && find . -type f ! -name '*.ncu-rep' ! -name 'program.out' -print0) | while IFS= read -r -d '' f; do
  mkdir -p "$dest/$(dirname "$f")"
  cp "$src/$f" "$dest/$f"
  case "$f" in *.csv) gzip -9n "$dest/$f" ;; esac
done
python3 - "$dest/manifest.json" <<'PY'
import json, sys
path = sys.argv[1]
m = json.load(open(path))
gz = lambda pages: {k: v + ".gz" if v.endswith(".csv") else v for k, v in pages.items()}
for run in m.get("runs", []):
    run["pages"] = gz(run.get("pages", {}))
    for r in run.get("rounds", []):  # the heavy pass's rounds, each with its own pages
        r["pages"] = gz(r.get("pages", {}))
with open(path, "w") as f:
    json.dump(m, f, indent=2, sort_keys=True)
    f.write("\n")
PY
[ -z "${3:-}" ] || cp "$3" "$dest/summary.txt"
[ -z "${4:-}" ] || cp "$4" "$dest/progress.txt"
echo "store-profile: $dest"
