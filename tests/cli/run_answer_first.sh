#!/usr/bin/env bash
# tests/cli/run_answer_first — `run` leads with the answer (issue 37): on a model with 40 fusable
# chains its default stdout opens with the plan's patterns (one row for the 40 clusters of one
# pattern, not 40 rows), then the end-to-end verdict, and stays within 40 lines; `--verbose`
# lists every cluster with its decision; `--json` prints summary.json's document with the
# patterns ("opportunities"). The model is generated here with onnx (python): 40 independent
# Mul -> Add -> activation chains on inputs of different widths. Skips (77) without onnx.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
PY=${FA_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "run_answer_first: FAIL: $*" >&2; exit 1; }
"$PY" -c 'import onnx, numpy' 2>/dev/null || { echo "run_answer_first: no onnx/numpy in $PY: skipped"; exit 77; }

"$PY" - chains.onnx <<'PY' || fail "could not write the model"
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
nodes, inputs, outputs, inits = [], [], [], []
acts = ["Relu", "Sigmoid", "Tanh", "Abs"]
for i in range(40):
    x, m, a, y = f"x{i}", f"m{i}", f"a{i}", f"y{i}"
    inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 64 + i]))
    outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 64 + i]))
    inits.append(numpy_helper.from_array(np.full([1], 0.5 + i, np.float32), f"c{i}"))
    nodes += [helper.make_node("Mul", [x, f"c{i}"], [m], name=f"mul{i}"),
              helper.make_node("Add", [m, f"c{i}"], [a], name=f"add{i}"),
              helper.make_node(acts[i % len(acts)], [a], [y], name=f"act{i}")]
m = helper.make_model(helper.make_graph(nodes, "chains", inputs, outputs, inits),
                      opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PY

# one cluster tried: the other 39 stay in the plan (not tried), so the plan has 40 clusters
export FA_TRACE_SPAN_S=0
"$CLI" run chains.onnx --iters 3 --max-clusters 1 --db fa.db --out out >out.txt 2>err.txt ||
  { cat out.txt err.txt; fail "run failed"; }
lines=$(wc -l <out.txt)
[ "$lines" -le 40 ] || { cat out.txt; fail "run printed $lines lines, at most 40 by default"; }
# where the run is (issue 37 item 7: a model run never said)
grep -q '^stored in fa.db as run [0-9]* (`fuse-advise show [0-9]*`)$' out.txt ||
  { cat out.txt; fail "stdout does not say where the run is stored"; }
head -n 4 out.txt | grep -Eq '^(Top opportunities|No cluster was kept)' ||
  { cat out.txt; fail "stdout does not open with the plan's patterns"; }
grep -q '^End to end: ' out.txt || { cat out.txt; fail "no end-to-end verdict"; }
[ "$(grep -n '^End to end: ' out.txt | cut -d: -f1)" -lt "$(grep -n '^kernels per iteration' out.txt | cut -d: -f1)" ] ||
  fail "the verdict does not come before the details"
grep -Eq '[0-9]+/40 ' out.txt || { cat out.txt; fail "the 40 clusters of one pattern are not one row (n/40)"; }
grep -q 'rounds taken in' out.txt && { cat out.txt; fail "a cluster's full reason on the default stdout"; }
# the grouped figures are the stored ones: each pattern row of stdout equals summary.json's
# opportunity, and each opportunity the sum over plan.json's clusters of that pattern
"$PY" - out.txt out/summary.json out/plan.json <<'PY' || { cat out.txt; fail "grouped figures differ from the stored ones"; }
import json, re, sys
out = open(sys.argv[1]).read().splitlines()
summ, plan = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
ops, cl = summ["opportunities"], plan["clusters"]
bad = []
for o in ops:
    mine = [c for c in cl if c["kind"] == o["kind"] and (c["label"] or "") == o["label"]]
    acc = [c for c in mine if c["status"] == "accepted"]
    if o["clusters"] != len(mine) or o["accepted"] != len(acc):
        bad.append(f"{o['label']}: {o['accepted']}/{o['clusters']} in summary.json, {len(acc)}/{len(mine)} in plan.json")
    # a BN fold inside an accepted epilogue adds nothing (its epilogue's saving holds it)
    inside = [c for c in acc if c["kind"] == "bn-fold" and any(e["kind"] == "epilogue" and e["status"] == "accepted" and
                                                                 e["depends_on"] == cl.index(c) for e in cl)]
    best = max(c["est_saving_ns"] for c in mine) if mine else None
    if best is not None and abs(o["best_predicted_ns"] - best) > 1e-5 * abs(best) + 1:
        bad.append(f"{o['label']}: best prediction {o['best_predicted_ns']} ns in summary.json, {best} in plan.json")
    own = [c for c in acc if c not in inside]
    if own:
        want = sum(c["measured_saving_ns"] for c in own)
        if abs(o["measured_saving_ns"] - want) > 1e-5 * abs(want) + 1:
            bad.append(f"{o['label']}: measured {o['measured_saving_ns']} ns in summary.json, {want} summed over plan.json")
base = summ["baseline"]["median_ns"]
rows = 0
for line in out:
    m = re.match(r"^  (\S+)\s+(\S+)\s+(\d+)/(\d+)\s+(-|[0-9.-]+ (?:us|ms))\s+(-|[0-9.-]+%)", line)
    if not m: continue
    rows += 1
    o = next((o for o in ops if (o["label"] or o["kind"]) == m.group(1) and o["kind"] == m.group(2)), None)
    if o is None: bad.append(f"stdout row {line!r}: no such opportunity in summary.json"); continue
    if (int(m.group(3)), int(m.group(4))) != (o["accepted"], o["clusters"]):
        bad.append(f"stdout {m.group(3)}/{m.group(4)} vs summary.json {o['accepted']}/{o['clusters']} for {o['label']}")
    if m.group(5) != "-":
        v, unit = m.group(5).split()
        ns = float(v) * (1e3 if unit == "us" else 1e6)
        if abs(ns - o["measured_saving_ns"]) > (51 if unit == "us" else 501):
            bad.append(f"stdout saving {m.group(5)} vs summary.json {o['measured_saving_ns']} ns for {o['label']}")
    p = re.search(r"\(predicted (a loss of )?([0-9.]+) (us|ms)\)", line)
    if p:
        ns = float(p.group(2)) * (1e3 if p.group(3) == "us" else 1e6) * (-1 if p.group(1) else 1)
        if abs(ns - o["best_predicted_ns"]) > (51 if p.group(3) == "us" else 501):
            bad.append(f"stdout prediction {p.group(0)} vs summary.json {o['best_predicted_ns']} ns for {o['label']}")
    elif m.group(5) == "-" and o["accepted"] == 0:
        bad.append(f"stdout row {line!r} of a pattern not kept names no prediction")
    if m.group(6) != "-" and abs(float(m.group(6)[:-1]) - 100 * o["share"]) > 0.051:
        bad.append(f"stdout share {m.group(6)} vs summary.json {o['share']} for {o['label']}")
if not rows: bad.append("no pattern row on stdout")
if bad: print("\n".join(bad), file=sys.stderr); sys.exit(1)
PY

# the report in headless Chromium at 1400 x 900 px: the answer and its verdict in the first screen,
# the cluster table's decision column without horizontal scrolling, the decision filter hiding the
# other rows (a copy of the report with a test script the copy's policy lists by hash)
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROME" ]; then
  js='(function(){var a=document.querySelector("#answer p.verdict").getBoundingClientRect();
var t=document.querySelector("#clusters table"),h=t.tHead.rows[0].cells,d=null;
for(var i=0;i<h.length;i++)if(h[i].textContent=="decision")d=h[i];
var dr=d?Math.round(d.getBoundingClientRect().right):99999;
document.getElementById("cf-accepted").click();
var r=t.tBodies[0].rows,vis=0,acc=0;for(var j=0;j<r.length;j++){if(r[j].offsetParent!==null)vis++;if(r[j].classList.contains("d-accepted"))acc++;}
document.body.setAttribute("data-layout",[Math.round(a.bottom),dr,document.documentElement.scrollWidth,vis,acc,r.length].join(","));})();'
  js=$(printf '%s' "$js" | tr '\n' ' ')
  hash=$(printf '%s' "$js" | openssl dgst -sha256 -binary | base64)
  sed -e "s#</body>#<script>$(printf '%s' "$js" | sed 's/[&#\\]/\\&/g')</script></body>#" \
      -e "s#script-src #script-src 'sha256-$hash' #" out/report.html >layout.html
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile" \
    --window-size=1400,900 --dump-dom "file://$tmp/layout.html" >layout.dom 2>chrome.log ||
    { cat chrome.log; fail "chromium failed to load the report"; }
  lay=$(grep -o 'data-layout="[0-9,]*"' layout.dom | tr -dc '0-9,')
  [ -n "$lay" ] || { cat chrome.log; fail "the layout script did not run"; }
  IFS=, read -r vbottom dright swidth vis acc nrows <<<"$lay"
  [ "$vbottom" -le 900 ] || fail "the end-to-end verdict ends at ${vbottom}px, below the first 900px screen"
  [ "$dright" -le 1400 ] && [ "$swidth" -le 1400 ] ||
    fail "the decision column ends at ${dright}px / the page is ${swidth}px wide at a 1400px window"
  [ "$nrows" -eq 40 ] && [ "$vis" -eq "$acc" ] || fail "the filter 'accepted' shows $vis rows, $acc of $nrows are accepted"
else
  echo "run_answer_first: chromium not installed: the report's layout not checked"
fi

"$CLI" apply 1 --iters 3 --max-clusters 1 --db fa.db --out out2 --verbose >verbose.txt 2>err.txt ||
  { cat verbose.txt err.txt; fail "apply --verbose failed"; }
rows=$(grep -Ec '^[0-9]+ +elementwise-chain ' verbose.txt)
[ "$rows" -eq 40 ] || { cat verbose.txt; fail "--verbose listed $rows of the 40 clusters"; }

"$CLI" apply 1 --iters 3 --max-clusters 1 --db fa.db --out out3 --json >json.txt 2>err.txt ||
  { cat json.txt err.txt; fail "apply --json failed"; }
"$PY" - <<'PY' || fail "--json is not summary.json's document with the patterns"
import json
d = json.load(open("json.txt"))
assert d["schema"] == "fuse-advise.summary/1", d.get("schema")
ops = d["opportunities"]
assert sum(o["clusters"] for o in ops) == 40, ops
assert d == json.load(open("out3/summary.json")), "stdout and summary.json differ"
PY
# `advise` on the bare model (no run, so no iteration): savings with no share of an iteration,
# never a "( 0.00%)" beside a non-zero saving; plan.json-like JSON says null
"$CLI" advise chains.onnx >adv.txt 2>adv.err || { cat adv.txt adv.err; fail "advise on the bare model failed"; }
grep -q ' saves ' adv.txt || { cat adv.txt; fail "advise on the bare model proposed nothing"; }
grep -q '%)' adv.txt && { cat adv.txt; fail "advise on the bare model shows a share of an iteration it never measured"; }
echo "run_answer_first: the answer first in $lines lines; --verbose and --json hold every cluster"
