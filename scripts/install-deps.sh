#!/usr/bin/env bash
# Installs the Debian 12 packages Optimas needs (scripts/deps-debian.txt). Idempotent and
# non-interactive; runs apt-get only when something is missing. Needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -vE '^\s*(#|$)' scripts/deps-debian.txt)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} Debian packages are installed"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
