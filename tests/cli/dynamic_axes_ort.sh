#!/usr/bin/env bash
# A model as PyTorch exports it (symbolic batch on input and output, BatchNormalization after a
# Conv, the Shape -> Gather -> Unsqueeze -> Concat -> Reshape flatten that keeps the batch dim),
# built with the onnx helper: `inspect`, `run` and `exec` work without flags; model.folded.onnx
# keeps the symbolic batch and matches the original in ONNX Runtime at batch 2 and 3; exec on
# batch-2 input files matches ONNX Runtime. Needs the python oracle (FA_PYTHON): 77 without it.
set -euo pipefail
PY=${FA_PYTHON:-python3}
"$PY" -c "import onnx, onnxruntime, numpy" 2>/dev/null || { echo "SKIP: onnx/onnxruntime not installed for $PY (bash scripts/setup.sh)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
"$PY" - <<'EOF_PY'
import os
import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
rng = np.random.default_rng(0)
W = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
sc, bi = (rng.random(8) + 0.5).astype(np.float32), rng.standard_normal(8).astype(np.float32)
mu, var = rng.standard_normal(8).astype(np.float32), (rng.random(8) + 0.5).astype(np.float32)
nodes = [h.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1], name="/features/features.0/features.0.0/Conv"),
         h.make_node("BatchNormalization", ["c", "sc", "bi", "mu", "var"], ["b"], name="/features/features.0/features.0.1/BatchNormalization"),
         h.make_node("Relu", ["b"], ["r"], name="/features/features.0/features.0.2/Relu"),
         h.make_node("Shape", ["r"], ["s"]), h.make_node("Gather", ["s", "i0"], ["s0"], axis=0),
         h.make_node("Unsqueeze", ["s0", "ax0"], ["s0u"]), h.make_node("Concat", ["s0u", "m1"], ["shp"], axis=0),
         h.make_node("Reshape", ["r", "shp"], ["y"])]
inits = [nh.from_array(a, n) for a, n in [(W, "W"), (sc, "sc"), (bi, "bi"), (mu, "mu"), (var, "var"),
         (np.array(0, np.int64), "i0"), (np.array([0], np.int64), "ax0"), (np.array([-1], np.int64), "m1")]]
g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, ["batch", 3, 8, 8])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["batch", 512])], inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), "dyn.onnx")
os.makedirs("in", exist_ok=True)
open("in/input_0.pb", "wb").write(nh.from_array(rng.standard_normal((2, 3, 8, 8)).astype(np.float32), "x").SerializeToString())
EOF_PY

"$FA_CLI" inspect dyn.onnx >inspect.out 2>inspect.err || { cat inspect.err; fail "inspect without flags"; }
grep -q "notice: 1 symbolic dim bound to the default 1: batch" inspect.err || fail "inspect notice: $(cat inspect.err)"
grep -q "/features/features.0/features.0.1/BatchNormalization" inspect.out || fail "inspect cut a node name"

"$FA_CLI" run dyn.onnx --iters 3 --warmup 1 --db fa.db --out out >run.out 2>run.err || { cat run.err; fail "run without flags"; }
[ "$(grep -c notice run.err)" = 1 ] || fail "run printed $(grep -c notice run.err) notices"
test -s out/model.folded.onnx || fail "no model.folded.onnx"
"$PY" - <<'EOF_PY' || fail "model.folded.onnx against the original in ONNX Runtime"
import numpy as np, onnx, onnxruntime as ort
m = onnx.load("out/model.folded.onnx")
onnx.checker.check_model(m)
dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
assert dims(m.graph.input[0]) == ["batch", 3, 8, 8], dims(m.graph.input[0])
assert dims(m.graph.output[0]) == ["batch", 512], dims(m.graph.output[0])
assert not [n for n in m.graph.node if n.op_type == "BatchNormalization"], "BatchNormalization left"
a, b = ort.InferenceSession("dyn.onnx"), ort.InferenceSession("out/model.folded.onnx")
for batch in (2, 3):
    x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8)).astype(np.float32)
    ra, rb = a.run(None, {"x": x})[0], b.run(None, {"x": x})[0]
    assert ra.shape == rb.shape == (batch, 512), (ra.shape, rb.shape)
    err = float(np.abs(ra - rb).max() / max(np.abs(ra).max(), 1e-12))
    assert err < 1e-5, err
    print(f"batch {batch}: folded vs original max rel error {err:.2e}")
EOF_PY

"$FA_CLI" exec dyn.onnx --inputs in --outputs eo 2>exec.err || { cat exec.err; fail "exec on batch-2 files"; }
"$FA_CLI" exec dyn.onnx --inputs in --outputs eo2 --shape batch=2 2>/dev/null || fail "exec --shape batch=2"
"$PY" - <<'EOF_PY' || fail "exec against ONNX Runtime"
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper as nh
x = nh.to_array(onnx.load_tensor("in/input_0.pb"))
ref = ort.InferenceSession("dyn.onnx").run(None, {"x": x})[0]
for d in ("eo", "eo2"):
    got = nh.to_array(onnx.load_tensor(f"{d}/output_0.pb"))
    assert got.shape == ref.shape == (2, 512), (got.shape, ref.shape)
    err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-12))
    assert err < 1e-5, err
    print(f"exec ({d}) vs ONNX Runtime at batch 2: max rel error {err:.2e}")
EOF_PY
echo "dynamic_axes_ort: 1 passed, 0 failed"
