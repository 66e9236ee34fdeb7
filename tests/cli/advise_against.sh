#!/usr/bin/env bash
# A plan estimated for a GPU set beside a trace of the model measured on it (issue 40):
# `advise zoo:bert-layer --target cuda --arch sm_90 --against N` with N an imported PyTorch-profiler
# trace of a BERT layer (tests/data/against, realistic ATen ops with Input Dims):
#  - on the same part (H100): members matched to the trace's ops by kind and input sizes
#    (MatMul -> aten::addmm / aten::bmm, Softmax -> aten::_softmax, Div -> aten::div), the bias
#    Adds PyTorch runs inside aten::addmm left unmatched with why, the decomposed LayerNorm and
#    the GELU epilogue matched whole to aten::native_layer_norm / aten::gelu; the overall ratio
#    is the matched measured over the matched estimated, and the text shows the same figures;
#  - a trace from an A100 against a plan for the H100: said, nothing compared; planned for the
#    A100 it compares;
#  - a trace of another model: few matches, said, no overall ratio;
#  - --against without --target cuda, or naming a model run: refused.
set -euo pipefail
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
SRC=${FA_SOURCE_DIR:?FA_SOURCE_DIR must point at the source tree}
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

"$CLI" import "$SRC/tests/data/against/bert_layer_h100.json" --db r.db >/dev/null   # run 1
"$CLI" import "$SRC/tests/data/against/bert_layer_a100.json" --db r.db >/dev/null   # run 2
"$CLI" import "$SRC/tests/data/import/trace_gemm_epilogue.json" --db r.db >/dev/null # run 3
adv() { "$CLI" advise zoo:bert-layer --db r.db --target cuda --no-gate "$@"; }
adv --arch sm_90 --against 1 --json >h100.json
adv --arch sm_90 --against 1 >h100.txt
adv --arch sm_90 --against 2 --json >a100_vs_h100.json
adv --arch sm_90 --against 2 >a100_vs_h100.txt
adv --arch 'A100 80GB SXM' --against 2 --json >a100.json
adv --arch sm_90 --against 3 --json >other.json
adv --arch sm_90 --against 3 >other.txt
adv --arch sm_90 --json >plain.json

"$py" - <<'PYEOF' || fail "the comparisons (see above)"
import json, math
h = json.load(open("h100.json"))
v = h["against"]
assert v["trace_run"] == 1 and v["compared"] and not v["few_matches"] and v["why"] is None, v
assert v["plan_part"] == "H100 SXM" and v["trace_part"] == "H100 SXM", v
members = {m["node"]: m for c in v["clusters"] for m in c["members"]}
want = {"attention.self.query.matmul": "aten::addmm", "intermediate.dense.matmul": "aten::addmm",
        "output.dense.matmul": "aten::addmm", "attention.self.qk": "aten::bmm", "attention.self.context": "aten::bmm",
        "attention.self.scale": "aten::div", "attention.self.softmax": "aten::_softmax",
        "output.residual": "aten::add", "attention.output.LayerNorm": "aten::native_layer_norm"}
for node, op in want.items():
    assert members[node]["trace_op"] == op, (node, members[node])
    assert members[node]["measured_ns"] > 0 and members[node]["est_ns"] > 0, members[node]
# the MLP's GEMM is the addmm reading [128,768] x [768,3072], never the [128,3072] x [3072,768] one
assert "128x768" in members["intermediate.dense.matmul"]["trace_shapes"], members["intermediate.dense.matmul"]
assert "128x3072" in members["output.dense.matmul"]["trace_shapes"], members["output.dense.matmul"]
# PyTorch adds the bias inside aten::addmm and runs GELU / LayerNorm as one op: no pairing invented
for node in ("attention.self.query.add", "intermediate.gelu.erf", "output.LayerNorm.sub"):
    m = members[node]
    assert m["trace_op"] is None and m["measured_ns"] is None and m["why"], m
for m in members.values():
    assert (m["trace_op"] is None) == (m["why"] is not None), m
byid = {c["id"]: c for c in h["clusters"]}
one = {byid[c["id"]]["label"]: c["one_op"] for c in v["clusters"] if c["one_op"]}
assert one.get("add+layer_norm(decomposed)") == "aten::native_layer_norm" and one.get("matmul+add+gelu_erf") == "aten::gelu", one
# one set of figures: the plan-wide sums are the clusters', the ratio theirs
assert v["matched"] == sum(c["matched"] for c in v["clusters"]) >= 9, v["matched"]
assert abs(v["est_ns"] - sum(c["est_ns"] or 0 for c in v["clusters"])) < 1e-6 * v["est_ns"]
assert all((c["est_ns"] is None) == (c["matched"] == 0) for c in v["clusters"]), "a sum over no match"
assert abs(v["measured_ns"] - sum(c["measured_ns"] or 0 for c in v["clusters"])) < 1e-6 * v["measured_ns"]
assert abs(v["ratio"] - v["measured_ns"] / v["est_ns"]) < 1e-3 * v["ratio"], v
open("ratio", "w").write("%.2f %d %d\n" % (v["ratio"], v["matched"], v["member_kernels"]))

x = json.load(open("a100_vs_h100.json"))["against"]
assert not x["compared"] and x["ratio"] is None and x["matched"] == 0 and x["measured_ns"] is None, x
assert "A100 80GB SXM" in x["why"] and "H100 SXM" in x["why"] and "not compared" in x["why"], x["why"]
assert all(m["trace_op"] is None for c in x["clusters"] for m in c["members"]), "a member compared across devices"
y = json.load(open("a100.json"))["against"]
assert y["compared"] and y["plan_part"] == "A100 80GB SXM" and y["matched"] == v["matched"] and y["ratio"] > 0, y

o = json.load(open("other.json"))["against"]
assert o["compared"] and o["few_matches"] and o["ratio"] is None, o
assert o["matched"] > 0 or (o["est_ns"] is None and o["measured_ns"] is None), o
assert "is it a trace of this model" in o["why"], o["why"]
assert "against" not in json.load(open("plain.json")), "an against section without --against"
PYEOF
ok "matched by kind and input sizes on the same part; the ratio from the one set of sums"

read -r ratio matched kernels <ratio
grep -q "^against trace 1 (NVIDIA H100 80GB HBM3, H100 SXM): $matched of the plan's $kernels member kernels matched.*(measured / estimated $ratio)" h100.txt ||
    fail "the text's summary does not show the JSON's figures ($ratio, $matched of $kernels): $(grep '^against' h100.txt)"
grep -q "trace 1 ran its norm (the residual add apart) as one aten::native_layer_norm" h100.txt || fail "the whole-op match is not in the text"
grep -q "^against: trace 2 ran on NVIDIA A100-SXM4-80GB (A100 80GB SXM, sm_80) and this plan is estimated for H100 SXM (sm_90): not compared" a100_vs_h100.txt ||
    fail "the device mismatch is not said: $(grep '^against' a100_vs_h100.txt)"
grep -q "measured / estimated" a100_vs_h100.txt other.txt && fail "a ratio shown where none holds"
grep -q "is it a trace of this model" other.txt || fail "few matches not said in the text"
ok "text: the same figures, the device mismatch and the few matches said"

set +e
"$CLI" advise zoo:bert-layer --db r.db --target cpu --against 1 >out 2>err; rc=$?
[ $rc -eq 2 ] && grep -q -- "--against" err || fail "--against with --target cpu: rc $rc $(cat err)"
"$CLI" run zoo:mlp-tiny --no-apply --target cpu --iters 1 --warmup 0 --db r.db >/dev/null 2>&1 # run 4
adv --arch sm_90 --against 4 >out 2>err; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "not an imported or traced trace" err || fail "--against a model run: rc $rc $(cat err)"
ok "--against refused without --target cuda and on a model run"
