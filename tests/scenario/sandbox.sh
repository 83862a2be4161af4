# The sandbox (docs/sandbox.md), end to end: a variant whose code appends to the application's
# main.cu (by its absolute path), writes into $HOME and /tmp, and connects to a server on this
# machine. Behind the walls (each level this machine allows: bwrap, unshare) none of it reaches
# outside and run.json names the level; at the watch level the writes happen (no walls) and the
# change to the application folder fails the variant, with the reason. A baseline whose build
# needs what the walls take away lowers the run to the watch level, and says why.
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"

D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app"
RUNS="$WORK/runs"
source "$(dirname "$0")/loop_lib.sh"

export HOME="$WORK/home"
mkdir -p "$HOME"
IN_TMP="/tmp/optimas-sandbox-$$-$RANDOM"
# A server on this machine that records each connection it accepts.
python3 - "$WORK/listener-port" "$WORK/connected" <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("connection\n")
    c.close()
PY
servers+=($!)
for _ in $(seq 100); do [ -f "$WORK/listener-port" ] && break; sleep 0.1; done
LISTENER=$(cat "$WORK/listener-port")

BEFORE_DATA='  std::vector<double> a(n), b(n), c(n), partial(16);'
# escape_reply NAME APP-DIR: the reply for a run of the application copy in APP-DIR.
escape_reply() {
  reply "$1" triad_kernel PC1,RF1 '#include <cstring>' "#include <cstring>
#include <cstdlib>
#include <string>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
static void escape() {
  if (FILE* f = std::fopen(\"$2/main.cu\", \"a\")) { std::fputs(\"// escaped\\n\", f); std::fclose(f); }
  if (FILE* f = std::fopen((std::string(std::getenv(\"HOME\")) + \"/escaped\").c_str(), \"w\")) std::fclose(f);
  if (FILE* f = std::fopen(\"$IN_TMP\", \"w\")) std::fclose(f);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons($LISTENER);
  a.sin_addr.s_addr = htonl(0x7f000001);
  if (s >= 0) { connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a); close(s); }
}" \
    triad_kernel PC1,RF1 "$BEFORE_DATA" "  escape();
$BEFORE_DATA"
}

walled=0
for level in bwrap unshare; do
  new_app "app-$level"
  escape_reply "escape-$level" "$WORK/app-$level"
  loop "$level" "$WORK/app-$level" "$WORK/replies/escape-$level.json" --retries 0 --scope file --runs 2 --warmup 0 --no-tune --sandbox "$level"
  if [ "$rc" = 2 ] && grep -q "does not allow it" "$log"; then
    echo "SKIP: --sandbox $level: $(grep -o 'this machine does not allow it[^;]*' "$log")"
    continue
  fi
  json_check "$run_json" "d.get('sandbox', {}).get('level') == '$level'" "$level: run.json names the level: $(tail -5 "$log")"
  json_check "$run_json" "d['variants'] and d['variants'][0]['status'] != 'build_failed'" \
    "$level: the variant builds: $(tail -5 "$log")"
  cmp -s "$APP/main.cu" "$WORK/app-$level/main.cu" || fail "$level: the application's main.cu changed"
  [ ! -e "$HOME/escaped" ] || fail "$level: the variant wrote \$HOME"
  [ ! -e "$IN_TMP" ] || fail "$level: the variant wrote $IN_TMP"
  [ ! -e "$WORK/connected" ] || fail "$level: the variant connected to 127.0.0.1:$LISTENER"
  grep -q "sandbox: $level: programs write only" "$log" || fail "$level: the progress does not say the level"
  pass "$level: the application folder, \$HOME, /tmp and the network stayed out of reach"
  walled=$((walled + 1))
done

# A build that needs what the walls take away (it counts itself in $HOME, as a compiler cache
# would): behind them the baseline's build fails, without them it works, so the run goes on at the
# watch level and says why.
if [ "$walled" -gt 0 ]; then
  new_app app-cache "s|command: g++|command: echo built >> \"\$HOME/builds\" \&\& g++|"
  grep -q 'builds" && g++' "$WORK/app-cache/optimas.yml" || fail "cache: the build command was not changed"
  honest_reply cache-honest
  loop cache "$WORK/app-cache" "$WORK/replies/cache-honest.json" --retries 0 --scope file --runs 2 --warmup 0 --no-tune
  # The reason is the walled build's failure (sh: cannot create $HOME/builds, exit code 2), not the
  # successful retry's "exit code 0" (the retry once overwrote the failure it reported).
  json_check "$run_json" "d['sandbox']['level'] == 'watch' and any('fails behind the' in w and 'exit code 0' not in w and 'exit code' in w for w in d['warnings'])" \
    "cache: the run should go on watched, with a warning: $(grep -i 'sandbox\|warning' "$log" | head -5)"
  grep -q "baseline: warning: the baseline's build fails behind the" "$log" || fail "cache: the progress does not say why"
  [ -s "$HOME/builds" ] || fail "cache: the build without walls should have written \$HOME/builds"
  rm -f "$HOME/builds"
  pass "a baseline that needs \$HOME: lowered to watch, with the reason"
fi

new_app app-watch
escape_reply escape-watch "$WORK/app-watch"
loop watch "$WORK/app-watch" "$WORK/replies/escape-watch.json" --retries 0 --scope file --runs 2 --warmup 0 --no-tune --sandbox watch
json_check "$run_json" "d.get('sandbox', {}).get('level') == 'watch'" "watch: run.json names the level: $(tail -5 "$log")"
json_check "$run_json" "d['variants'] and d['variants'][0]['status'] == 'validation_failed' and 'changed the application folder' in d['variants'][0]['reason'] and 'main.cu (changed)' in d['variants'][0]['reason']" \
  "watch: the variant fails for changing main.cu: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["variants"][0])' "$run_json")"
[ -e "$HOME/escaped" ] && [ -e "$IN_TMP" ] && [ -e "$WORK/connected" ] ||
  fail "watch: without walls the variant's writes and connection should have happened (the checks above could not fail)"
rm -f "$IN_TMP"
pass "watch: the change to the application folder failed the variant ($walled walled level(s) checked)"
