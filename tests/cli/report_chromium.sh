#!/usr/bin/env bash
# tests/cli/report_chromium — the report of a real run loads in headless Chromium with no console
# errors, its inline SVGs (roofline, timeline) are in the DOM after scripts ran, its own script runs
# under the page's policy while a script the policy does not list by hash does not, clicking a table
# header sorts the rows (ascending, then descending), and a screenshot
# is written as a test artifact ($FA_BUILD_DIR/tests/artifacts/report.png). A canary page with a
# deliberate script error proves the console check can fail. Skips (77) without chromium.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
BUILD=${FA_BUILD_DIR:-$(dirname "$CLI")}
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "report_chromium: chromium is not installed (apt-get install -y chromium): skipped"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/fa.db"
fail() { echo "report_chromium: FAIL: $*" >&2; exit 1; }

"$CLI" run zoo:mlp-tiny --no-apply --iters 3 --db "$db" >"$tmp/run.out" 2>&1 || { cat "$tmp/run.out"; fail "run failed"; }
# roofs and clusters when those stages are built (the report says "not measured" otherwise)
"$CLI" analyze latest --db "$db" >/dev/null 2>&1 || echo "report_chromium: note: analyze failed; ceilings will show as not measured"
"$CLI" advise latest --db "$db" >/dev/null 2>&1 || echo "report_chromium: note: advise failed; no plan in the report"
"$CLI" report --db "$db" -o "$tmp/out" >"$tmp/report.out" 2>&1 || { cat "$tmp/report.out"; fail "report failed"; }
for f in report.html graph.dot graph.svg trace.json summary.json kernels.csv; do
  [ -s "$tmp/out/$f" ] || fail "$f missing or empty"
done
if grep -Eq '(src|href)="https?:' "$tmp/out/report.html"; then fail "report.html references the network"; fi

chrome() { # chrome LOGFILE ARGS...: headless, no network, console messages on stderr
  local log=$1; shift
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --no-first-run --disable-extensions --disable-sync --user-data-dir="$tmp/profile" \
    --enable-logging=stderr --v=0 --log-level=0 "$@" 2>"$log"
}
console_errors() { grep -E 'Uncaught|ERROR:CONSOLE|:CONSOLE\(.*(Error|error)|violates the following Content Security Policy' "$1"; }

# canary: a page with a script error must be detected, or the check below proves nothing
printf '<!DOCTYPE html><html><body><p>canary</p><script>fa_no_such_function();</script></body></html>' >"$tmp/canary.html"
chrome "$tmp/canary.log" --dump-dom "file://$tmp/canary.html" >/dev/null
console_errors "$tmp/canary.log" >/dev/null || { cat "$tmp/canary.log"; fail "console error detection does not work (canary not seen)"; }

chrome "$tmp/chrome.log" --dump-dom "file://$tmp/out/report.html" >"$tmp/dom.html" || { cat "$tmp/chrome.log"; fail "chromium failed to load report.html"; }
if console_errors "$tmp/chrome.log"; then fail "console errors while loading report.html"; fi
grep -q '<svg id="roofline-svg"' "$tmp/dom.html" || fail "roofline SVG not in the DOM"
grep -q '<svg id="timeline-svg"' "$tmp/dom.html" || fail "timeline SVG not in the DOM"
grep -q 'class="sortable"' "$tmp/dom.html" || fail "no sortable table in the DOM"

grep -q '<html lang="en" class="js">' "$tmp/dom.html" || fail "the report's script did not run (its policy hash)"

# the page's policy: no 'unsafe-inline'; a script it does not list by hash never runs (a copy with
# one more inline script), so markup that reached the page from a database could not run either
grep -q "script-src 'sha256-" "$tmp/out/report.html" || fail "the policy does not list the script by its hash"
if grep -q "unsafe-inline" "$tmp/out/report.html"; then fail "the policy allows inline scripts or styles"; fi
sed 's#</body>#<script>document.body.setAttribute("data-injected","ran");</script></body>#' "$tmp/out/report.html" >"$tmp/injected.html"
chrome "$tmp/injected.log" --dump-dom "file://$tmp/injected.html" >"$tmp/injected.dom"
grep -q '<html lang="en" class="js">' "$tmp/injected.dom" || fail "injected copy: the report's own script did not run"
if grep -q 'data-injected="ran"' "$tmp/injected.dom"; then fail "a script the policy does not list ran"; fi

# sorting: a copy of the report with a test script that clicks the per-op table's "median" header
# twice and records whether the rows came out ascending, then descending (the product is untouched;
# the copy's policy lists the test script's hash next to the report's own)
check_js='(function(){var t=document.querySelector("#ops table");var th=t.tHead.rows[0].cells[2];
function col(){var v=[],r=t.tBodies[0].rows;for(var i=0;i<r.length;i++)v.push(parseFloat(r[i].cells[2].getAttribute("data-v")));return v;}
function mono(v,up){for(var i=1;i<v.length;i++)if(up?v[i]<v[i-1]:v[i]>v[i-1])return false;return v.length>1;}
th.click();var a=mono(col(),true);th.click();var d=mono(col(),false);
document.body.setAttribute("data-sort-check",(a&&d)?"ok":"bad");})();'
check_js=$(printf '%s' "$check_js" | tr '\n' ' ')
check_hash=$(printf '%s' "$check_js" | openssl dgst -sha256 -binary | base64)
sed -e "s#</body>#<script>$(printf '%s' "$check_js" | sed 's/[&#\\]/\\&/g')</script></body>#" \
    -e "s#script-src #script-src 'sha256-$check_hash' #" "$tmp/out/report.html" >"$tmp/sortcheck.html"
chrome "$tmp/sort.log" --dump-dom "file://$tmp/sortcheck.html" >"$tmp/sortdom.html"
if console_errors "$tmp/sort.log"; then fail "console errors in the sort check"; fi
grep -q 'data-sort-check="ok"' "$tmp/sortdom.html" || fail "clicking a header does not sort the table ($(grep -o 'data-sort-check="[a-z]*"' "$tmp/sortdom.html"))"

mkdir -p "$BUILD/tests/artifacts"
shot="$BUILD/tests/artifacts/report.png"
rm -f "$shot"
chrome "$tmp/shot.log" --hide-scrollbars --window-size=1280,1800 --screenshot="$shot" "file://$tmp/out/report.html" >/dev/null
[ -s "$shot" ] || { cat "$tmp/shot.log"; fail "no screenshot written"; }
cp "$tmp/out/report.html" "$BUILD/tests/artifacts/report.html"
echo "report_chromium: ok; screenshot: $shot"
