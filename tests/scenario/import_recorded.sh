# Every example's recorded H200 profile imports (filled in once data is recorded).
source "$(dirname "$0")/lib.sh"
skip "no recorded profiles yet"
