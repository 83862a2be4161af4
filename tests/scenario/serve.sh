# optimas serve and optimas report end to end, without a GPU: a run made with --execute no and
# a measured run (the host stand-in for stream, the recorded H200 profile, a local model server
# whose reply carries <script>) are served on a free port of 127.0.0.1, with the campaign of
# tests/data/campaign (two of its cells pointing at those runs) and a campaign whose table.json
# is broken; every page and endpoint is fetched with curl and checked; headless Chromium loads
# each page with no console message and no failed request (the server logs every answer), draws
# the campaign's charts (their colours counted in a screenshot), and the report opens offline.
# OPTIMAS_SCREENSHOTS=DIR keeps a screenshot of each page there (docs/img/ holds the committed ones).
source "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || skip "the stand-in is built with g++"
command -v curl >/dev/null || skip "curl is not installed"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || skip "chromium is not installed (scripts/deps-debian.txt lists it)"

D="$OPTIMAS_TEST_DATA/h200/stream"
APP="$OPTIMAS_SOURCE_DIR/tests/scenario/loop-app"
RUNS="$WORK/runs"
source "$(dirname "$0")/loop_lib.sh"

# The honest edit of loop_cheats_results.sh, its rationale and summary carrying markup.
python3 - "$WORK/replies/honest.json" <<'PY'
import json, sys
edits = [{"file": "main.cu", "kernel": "triad_kernel", "find": "for (int r = 0; r < 8; ++r) {",
          "replace": "for (int r = 0; r < 1; ++r) {", "line_start": None, "line_end": None, "new_text": None,
          "evidence": ["PC1", "RF1"], "rationale": "Triad repeats itself <script>alert(1)</script>.",
          "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]}]
json.dump({"summary": "triad is memory-bound <img src=x onerror=alert(2)>", "edits": edits, "withheld": []},
          open(sys.argv[1], "w"))
PY
loop unmeasured "$APP" "$WORK/replies/honest.json" --retries 0 --execute no
unmeasured=$id
loop measured "$APP" "$WORK/replies/honest.json" --retries 0 --runs 2 --warmup 0
measured=$id
# The measured run's re-profile as a GPU machine leaves it (here: the recorded profile), for the
# roofline's "after" point.
vdir="$RUNS/$measured/iterations/1/attempt-1"
[ -d "$vdir" ] || fail "no variant folder $vdir"
cp -r "$D" "$vdir/profile" && touch "$vdir/profile/.complete"
# A link out of the store inside a run folder: the server must refuse to follow it.
echo "secret-$RANDOM" > "$WORK/secret.txt"
ln -s "$WORK/secret.txt" "$RUNS/$measured/link.txt"

# The campaign fixture, two of its cells now runs of this store; and a campaign whose table.json
# is cut short, which the Runs page must skip with a note.
mkdir -p "$RUNS/campaigns/broken"
cp -r "$OPTIMAS_TEST_DATA/campaign/campaigns/examples-ablation" "$RUNS/campaigns/"
python3 - "$RUNS/campaigns/examples-ablation/state.json" "$measured" "$unmeasured" <<'PY'
import json, sys
path, measured, unmeasured = sys.argv[1:]
state = json.load(open(path))
state["cells"][0]["run_id"], state["cells"][1]["run_id"] = measured, unmeasured
json.dump(state, open(path, "w"))
PY
printf '{"schema": "optimas.campaign-table/1",\n "rows": [' > "$RUNS/campaigns/broken/table.json"

# --- The server -------------------------------------------------------------------------------
mkfifo "$WORK/serve-ready"
"$OPTIMAS" -v serve --runs-dir "$RUNS" --port 0 > "$WORK/serve-ready" 2> "$WORK/serve.log" &
server=$!
servers+=($server)
read -r word url < "$WORK/serve-ready" || fail "optimas serve printed nothing"$'\n'"$(cat "$WORK/serve.log")"
[ "$word" = serving ] || fail "optimas serve: '$word $url'"
case "$url" in http://127.0.0.1:*/) ;; *) fail "not listening on 127.0.0.1: $url" ;; esac
base=${url%/}

# fetch PATH CODE: the body in $WORK/body; the status must be CODE.
fetch() {
  local code
  code=$(curl -sS -o "$WORK/body" -w '%{http_code}' "$base$1") || fail "curl $1"
  [ "$code" = "$2" ] || fail "GET $1: $code, expected $2"$'\n'"$(head -c 600 "$WORK/body")"
}
has() { grep -qF -- "$1" "$WORK/body" || fail "GET $2: no '$1' in the page"; }
hasnt() { ! grep -qF -- "$1" "$WORK/body" || fail "GET $2: '$1' in the page"; }

pages=("/" "/runs/$measured" "/runs/$unmeasured" "/compare" "/compare?a=$measured&b=$measured:i1a1"
       "/campaigns/examples-ablation")
# Another site's name, as a page of it would send after DNS rebinding: refused (issue #52).
port=${base##*:}
code=$(curl -sS -o "$WORK/body" -w '%{http_code}' -H "Host: rebind.example:$port" "$base/") || fail "curl with another Host"
[ "$code" = 421 ] || fail "a request naming rebind.example: $code, expected 421"
has "--allowed-host" "/ (Host: rebind.example)"
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Host: localhost:$port" "$base/") || fail "curl with Host: localhost"
[ "$code" = 200 ] || fail "a request naming localhost: $code, expected 200"
fetch / 200
has "$measured" /
has "$unmeasured" /
has 'href="/campaigns/examples-ablation"' /
has "campaign broken skipped: " /
hasnt 'href="/campaigns/broken"' /
fetch /campaigns/examples-ablation 200
page=/campaigns/examples-ablation
has "<a href=\"/runs/$measured\">" "$page"
has "<a href=\"/runs/$unmeasured\">" "$page"
has '<meta http-equiv="refresh" content="5">' "$page"
has '<svg class="campaign-speedup"' "$page"
fetch /campaigns/broken 200
has "table.json:2:" /campaigns/broken
fetch "/campaigns/..%2Fexamples-ablation" 404
fetch /api/campaigns 200
json_check "$WORK/body" "sorted(c['id'] for c in d) == ['broken', 'examples-ablation']" "/api/campaigns: both folders"
fetch /api/campaigns/examples-ablation 200
json_check "$WORK/body" "len(d['table']['rows']) == 16 and d['cells']['total'] == 32" "/api/campaigns/ID"
fetch "/?q=nomatch" 200
has "0 of 2 run(s)" "/?q=nomatch"

fetch "/runs/$measured" 200
page="/runs/$measured"
has 'Triad repeats itself &lt;script&gt;alert(1)&lt;/script&gt;.' "$page"
has '&lt;img src=x onerror=alert(2)&gt;' "$page"
hasnt '<script' "$page"
hasnt '<img' "$page"
# Evidence links both ways: the edit cites PC1 and RF1, their rows link back to it.
python3 - "$WORK/body" <<'PY' || fail "$page: evidence links"
import re, sys
html = open(sys.argv[1]).read()
edit = re.search(r'<div class="edit" id="edit-i1a1-0">(.*?)</div>', html, re.S)
assert edit, "no edit-i1a1-0"
for ev in ("PC1", "RF1"):
    assert f'href="#ev-{ev}"' in edit.group(1), f"the edit does not link {ev}"
    row = re.search(rf'<tr class="ev" id="ev-{ev}">(.*?)</tr>', html, re.S)
    assert row and 'href="#edit-i1a1-0"' in row.group(1), f"{ev} does not link back to the edit"
# The roofline of triad_kernel: the before and after points, inside the plotting frame.
k = re.search(r'id="kernel-triad_kernel">(.*?)</section>', html, re.S).group(1)
svg = re.search(r'<svg class="roofline".*?</svg>', k, re.S).group(0)
frame = re.search(r'<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)"', svg)
x0, y0, w, h = map(float, frame.groups())
for label in ("before", "after"):
    m = re.search(rf'data-label="{label}" cx="([0-9.]+)" cy="([0-9.]+)"', svg)
    assert m, f"no {label} point"
    cx, cy = float(m.group(1)), float(m.group(2))
    assert x0 < cx < x0 + w and y0 < cy < y0 + h, f"{label} point outside the frame"
assert 'data-name="DRAM"' in svg, "no DRAM ceiling"
# The measurement plot with both programs' samples and the interval.
assert html.count('class="sample"') >= 4 and 'class="ci"' in html, "no samples or no interval"
PY
fetch "/runs/$unmeasured" 200
has "not_measured" "/runs/$unmeasured"
fetch "/compare?a=$measured&b=$measured:i1a1" 200
has "triad_kernel" /compare

# JSON endpoints.
fetch /api/runs 200
json_check "$WORK/body" "sorted(r['id'] for r in d) == sorted(['$measured', '$unmeasured'])" "/api/runs: both runs"
fetch "/api/runs/$measured" 200
json_check "$WORK/body" "d['variants'][0]['reply']['edits'][0]['rationale'].startswith('Triad repeats itself <script>')" \
  "/api/runs/ID: the reply as data"
json_check "$WORK/body" "d['variants'][0]['after'] is not None" "/api/runs/ID: the re-profile analysed"
fetch "/api/runs/$measured/progress" 200
json_check "$WORK/body" "d['status'] == 'finished' and d['variants'][0]['key'] == 'i1a1'" "progress"
fetch "/api/compare?a=$measured&b=$measured:i1a1" 200
json_check "$WORK/body" "'triad_kernel' in d['kernels']" "/api/compare"

# Paths outside the store.
fetch "/runs/$measured/files/diagnostics.txt" 200
fetch "/runs/$measured/files/..%2Findex.sqlite" 403
fetch "/runs/$measured/files/..%2F..%2Fsecret.txt" 403
fetch "/runs/$measured/files/%2Fetc%2Fpasswd" 403
fetch "/runs/$measured/files/link.txt" 403
hasnt "secret-" "link.txt"
fetch "/runs/ffffffff" 404

# --- Headless Chromium ------------------------------------------------------------------------
# browse URL NAME: the DOM in $WORK/NAME.dom; no console message (a script, a CSP violation, a
# failed load) in Chromium's log. Network names resolve nowhere, so nothing outside is reachable.
browse() {
  "$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$WORK/chromium" --enable-logging=stderr --v=0 \
    --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" --dump-dom "$1" > "$WORK/$2.dom" 2> "$WORK/$2.chromium.log" \
    || fail "chromium could not load $1"$'\n'"$(tail -5 "$WORK/$2.chromium.log")"
  if grep -E "CONSOLE|ERR_|Refused to" "$WORK/$2.chromium.log"; then fail "$1: console messages in Chromium"; fi
  grep -q "</main>" "$WORK/$2.dom" || fail "$1: Chromium shows no page"
  if [ -n "${OPTIMAS_SCREENSHOTS:-}" ]; then
    mkdir -p "$OPTIMAS_SCREENSHOTS"
    "$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$WORK/chromium" --hide-scrollbars \
      --window-size=1280,1600 --screenshot="$OPTIMAS_SCREENSHOTS/$2.png" "$1" 2> /dev/null || fail "screenshot of $1"
  fi
}
n=0
for p in "${pages[@]}"; do
  n=$((n + 1))
  name=$(case "$p" in /) echo runs ;; /compare) echo compare-form ;; /compare*) echo compare ;;
         "/runs/$measured") echo run ;; /campaigns/*) echo campaign ;; *) echo run-unmeasured ;; esac)
  browse "$base$p" "$name"
done
grep -q 'data-label="after"' "$WORK/run.dom" || fail "Chromium's DOM of the run page has no after point"
# The campaign's charts as Chromium laid them out: a point per row with a speedup (15), each
# inside the plotting frame, and the rates' bars; then drawn: the two backends' colours must
# fill pixels of a screenshot (nothing else on the page has them).
"$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$WORK/chromium" --hide-scrollbars \
  --window-size=1280,1600 --screenshot="$WORK/campaign.png" "$base/campaigns/examples-ablation" 2> /dev/null \
  || fail "screenshot of the campaign page"
python3 - "$WORK/campaign.dom" "$WORK/campaign.png" <<'PY' || fail "the campaign page's charts"
import re, struct, sys, zlib
html = open(sys.argv[1]).read()
svg = re.search(r'<svg class="campaign-speedup".*?</svg>', html, re.S).group(0)
x0, y0, w, h = map(float, re.search(r'<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)" fill="none"', svg).groups())
points = re.findall(r'class="geomean"[^>]*cx="([0-9.]+)" cy="([0-9.]+)"', svg)
assert len(points) == 15, f"{len(points)} speedup points, expected 15"
for cx, cy in points:
    assert x0 < float(cx) < x0 + w and y0 < float(cy) < y0 + h, f"a point outside the frame: {cx}, {cy}"
assert 'class="reference"' in svg, "no 1x line"
assert html.count('class="rate"') == 30, "not 30 rate bars"

def pixels(path):  # an 8-bit RGB or RGBA PNG, not interlaced (what Chromium writes)
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat = 8, b""
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour type {colour}"
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    bpp = 4 if colour == 6 else 3
    raw, stride, prev, out = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append(bytes(line))
        prev = line
    return out, bpp

rows, bpp = pixels(sys.argv[2])
for colour in ("2563eb", "f59e0b"):  # backend_colour(0) and (1)
    rgb = bytes.fromhex(colour)
    n = sum(sum(1 for i in range(0, len(r), bpp) if r[i:i + 3] == rgb) for r in rows)
    assert n > 500, f"only {n} pixels of #{colour}: the charts are not drawn"
PY
# Every request Chromium made was answered 200 (the server logs each one; the 421 is the refused
# Host above).
if grep -E "GET .* -> [^2]" "$WORK/serve.log" | grep -vE "ffffffff|files/|campaigns/\.\.| -> 421" ; then fail "failed requests in the server's log"; fi

# --- The report ---------------------------------------------------------------------------------
"$OPTIMAS" report "${measured:0:8}" --runs-dir "$RUNS" -o "$WORK/report.html" > /dev/null || fail "optimas report"
kill "$server"
wait "$server" 2>/dev/null || true
kill -0 "$server" 2>/dev/null && fail "optimas serve still runs after SIGTERM"
grep -q '<svg class="roofline"' "$WORK/report.html" || fail "the report has no roofline"
if grep -oE '(href|src)="[^"#][^"]*"' "$WORK/report.html" | grep -v 'href="data:,"'; then fail "the report links outside itself"; fi
browse "file://$WORK/report.html" report
grep -q 'class="samples"' "$WORK/report.dom" || fail "the report, offline, has no measurement plot"
expect_fail 1 "no run matches|unknown|ffffffff" -- "$OPTIMAS" report ffffffff --runs-dir "$RUNS" -o "$WORK/x.html"
pass "serve: $n pages and 7 endpoints served and loaded in Chromium, the campaign's charts drawn, paths outside refused, report offline"
