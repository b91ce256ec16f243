#!/bin/sh
# Loads reports written by `annealer report` in headless Chromium and checks, in the DOM as the
# browser left it after running the page's script, that the script ran without an error
# (<html data-render-ok="1">, no data-script-error) and that the total latency is shown.
# A page with a deliberate script error must be caught, so that the check is known to bite.
# Exit 77 (ctest SKIP_RETURN_CODE) when no Chromium is installed.
# Usage: browser_test.sh ANNEALER_BINARY SOURCE_DIR
set -eu
annealer=$1
source_dir=$2

browser=""
for candidate in "${CHROMIUM:-}" chromium chromium-browser google-chrome; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then
    browser=$(command -v "$candidate")
    break
  fi
done
if [ -z "$browser" ]; then
  echo "skipped: no chromium found (set CHROMIUM or install Debian's chromium)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The DOM after load, scripts included. Each run gets its own profile; nothing goes online.
dump_dom() {
  profile=$(mktemp -d "$work/profile.XXXXXX")
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$profile" --dump-dom "file://$1" 2>"$work/chromium.log"
}

fail() {
  echo "FAIL: $*"
  exit 1
}

# The shown total, as the page was written: <span id="total">5,081,850.9</span>.
total_in() {
  sed -n 's/.*<span id="total">\([0-9][0-9,.]*\)<\/span>.*/\1/p' "$1" | head -n 1
}

check_page() {
  page=$1
  dom="$work/dom.html"
  dump_dom "$page" >"$dom" || fail "chromium failed on $page: $(tail -n 3 "$work/chromium.log")"
  if grep -q '<html[^>]*data-script-error' "$dom"; then
    fail "script error in $page: $(grep -o '<html[^>]*data-script-error="[^"]*"' "$dom")"
  fi
  grep -q '<html[^>]*data-render-ok="1"' "$dom" || fail "the script did not finish on $page"
  expected=$(total_in "$page")
  [ -n "$expected" ] || fail "no total in $page"
  [ "$(total_in "$dom")" = "$expected" ] || fail "the rendered page does not show the total $expected"
  echo "ok: $page renders, total $expected"
}

problem="$source_dir/problems/mlsys-2026-17.json"
"$annealer" baseline "$problem" -o "$work/baseline.json" 2>/dev/null
cat >"$work/run.jsonl" <<'LOG'
{"seconds": 0.015, "latency": 5081850.88, "worker": "baseline", "lower_bound": 4966400}
{"seconds": 0.068, "latency": 4966400, "worker": "greedy-fusion", "lower_bound": 4966400}
LOG
"$annealer" report "$problem" "$work/baseline.json" -o "$work/valid.html" --log "$work/run.jsonl" 2>/dev/null
check_page "$work/valid.html"

# An invalid schedule (the example problem's two ops fused at a tile that does not fit).
cat >"$work/oom.json" <<'SCHEDULE'
{"subgraphs": [[0, 1]], "granularities": [[128, 128, 1]], "tensors_to_retain": [[]]}
SCHEDULE
"$annealer" report "$source_dir/problems/example_problem.json" "$work/oom.json" -o "$work/invalid.html" 2>/dev/null
check_page "$work/invalid.html"
grep -q 'Broken rule W' "$work/dom.html" || fail "the invalid report does not name the broken rule"

# Interaction: hovering an op of the DAG highlights its subgraph's row; clicking a row zooms
# the DAG to that subgraph's ops; the DAG swaps to one node per subgraph.
cat >"$work/interact.js" <<'JS'
<script>
(function () {
  var op = document.querySelector('#dag .op');
  op.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  var id = op.getAttribute('data-sg').split(' ')[0];
  var row = document.getElementById('sg-' + id);
  var hovered = row.classList.contains('hl') ? document.getElementById('dag').classList.contains('focus') : false;
  var before = document.getElementById('dag').getAttribute('viewBox');
  var last = document.querySelectorAll('tr.sg');
  last[last.length - 1].dispatchEvent(new MouseEvent('click', {bubbles: true}));
  var zoomed = document.getElementById('dag').getAttribute('viewBox') !== before;
  document.querySelector('button[data-swap]').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  var swapped = document.getElementById('dag').getBoundingClientRect().height === 0 ?
      document.getElementById('dag-sg').getBoundingClientRect().height > 0 : false;
  var ok = hovered ? (zoomed ? swapped : false) : false;
  document.documentElement.setAttribute('data-interaction', ok ? 'ok' : 'broken');
})();
</script>
JS
# (awk's sub() reads & in the replacement as the match: the script has none.)
awk -v script="$(cat "$work/interact.js")" '{ sub("</body>", script "</body>"); print }' "$work/valid.html" >"$work/interact.html"
dump_dom "$work/interact.html" >"$work/dom.html" || fail "chromium failed on interact.html"
grep -q '<html[^>]*data-interaction="ok"' "$work/dom.html" || fail "hover/click highlighting does not work"
echo "ok: hover highlights the row, a row click zooms the DAG, the collapsed DAG shows"

# The check must catch a failing script.
sed 's|</body>|<script>undefinedFunction();</script></body>|' "$work/valid.html" >"$work/broken.html"
dump_dom "$work/broken.html" >"$work/dom.html" || fail "chromium failed on broken.html"
grep -q '<html[^>]*data-script-error="[^"]*undefinedFunction' "$work/dom.html" ||
  fail "a deliberate script error went unnoticed"
echo "ok: a deliberate script error is caught"
