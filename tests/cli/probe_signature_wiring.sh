#!/usr/bin/env bash
# tests/cli/probe_signature_wiring — two clusters of the same ops and shapes that differ in what
# leaves them get different signatures, so the probe never runs one's compiled kernel for the other.
# The model (made here with onnx) has two residual add + decomposed LayerNorm blocks of one shape
# ([2, 64, 64]): the first one's residual sum is read again later (its cluster has two outputs),
# the second one's is not (one output), and the second LayerNorm has another epsilon. Before the
# signature named the wiring, outputs and constants, both clusters shared one probe build: HF
# Swin's `run` died in the generated kernel (exit 139), writing through an output pointer the
# one-output cluster never passed. The Linear between the blocks has a bias, as Swin's fc2 has, so
# that its epilogue stops at the bias and the residual Add joins the second LayerNorm's cluster. Checks: `run` succeeds and verifies the fused model, and
# plan.json's add+layer_norm clusters carry distinct signatures. Skips (77) without onnx.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
PY=${FA_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "probe_signature_wiring: FAIL: $*" >&2; exit 1; }
"$PY" -c 'import onnx, numpy' 2>/dev/null || { echo "probe_signature_wiring: no onnx/numpy in $PY: skipped"; exit 77; }

"$PY" - blocks.onnx <<'PY' || fail "could not write the model"
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(0)
S = [2, 64, 64]
nodes, inits = [], []
def const(name, arr):
    inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
def layer_norm(p, x, eps, out):
    const(p + "two", 2.0); const(p + "eps", eps)
    const(p + "w", rng.uniform(0.5, 1.5, 64)); const(p + "b", rng.uniform(-0.1, 0.1, 64))
    nodes.extend([
        helper.make_node("ReduceMean", [x], [p + "m"], axes=[-1], name=p + "mean"),
        helper.make_node("Sub", [x, p + "m"], [p + "d"], name=p + "sub"),
        helper.make_node("Pow", [p + "d", p + "two"], [p + "sq"], name=p + "pow"),
        helper.make_node("ReduceMean", [p + "sq"], [p + "v"], axes=[-1], name=p + "var"),
        helper.make_node("Add", [p + "v", p + "eps"], [p + "ve"], name=p + "addeps"),
        helper.make_node("Sqrt", [p + "ve"], [p + "r"], name=p + "sqrt"),
        helper.make_node("Div", [p + "d", p + "r"], [p + "n"], name=p + "div"),
        helper.make_node("Mul", [p + "n", p + "w"], [p + "nw"], name=p + "mul"),
        helper.make_node("Add", [p + "nw", p + "b"], [out], name=p + "addb")])
nodes.append(helper.make_node("Add", ["x", "a"], ["s1"], name="res1"))
layer_norm("ln1_", "s1", 1e-5, "y1")
const("W", rng.standard_normal((64, 64)) * 0.1)
const("bias", rng.standard_normal(64) * 0.1)
nodes.append(helper.make_node("MatMul", ["y1", "W"], ["h0"], name="proj"))
nodes.append(helper.make_node("Add", ["h0", "bias"], ["h"], name="proj_bias"))  # the Linear's epilogue stops here
nodes.append(helper.make_node("Add", ["h", "s1"], ["s2"], name="res2"))  # s1 read again: cluster 1 has two outputs
layer_norm("ln2_", "s2", 1e-6, "out")
g = helper.make_graph(nodes, "blocks",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, S),
                       helper.make_tensor_value_info("a", TensorProto.FLOAT, S)],
                      [helper.make_tensor_value_info("out", TensorProto.FLOAT, S)], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
PY

export FA_TRACE_SPAN_S=0
"$CLI" run blocks.onnx --iters 3 --db fa.db --out out >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 0 ] || { cat out.txt err.txt; fail "run exited $rc"; }
grep -q "the fused model's outputs match the unfused model's" out.txt || { cat out.txt; fail "the fused model was not verified"; }
"$PY" - out/plan.json <<'PY' || fail "the two add+layer_norm clusters share a signature"
import json, sys
cl = [c for c in json.load(open(sys.argv[1]))["clusters"] if c["kind"] == "reduction" and "layer_norm" in (c["label"] or "")]
print("add+layer_norm clusters:", [(c["label"], len(c["outputs"])) for c in cl])
assert len(cl) == 2 and all(c["label"].startswith("add+layer_norm") for c in cl), f"expected two add+layer_norm clusters: {cl}"
assert sorted(len(c["outputs"]) for c in cl) == [1, 2], "expected one cluster of two outputs and one of one"
assert cl[0]["signature"] != cl[1]["signature"], cl[0]["signature"]
PY
echo "probe_signature_wiring: ok"
