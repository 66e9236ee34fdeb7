#!/usr/bin/env bash
# bench/bench_attention.sh — issue 33's attention targets: one BERT-style self-attention block
# (hidden 768 = 12 heads x 64, the views around Q, K, V and the output, Div by sqrt(64), an
# additive padding mask) with a symbolic sequence, run by `fuse-advise run` at each sequence
# length in SEQS (default "64 512", bound with --shape sequence=N). Prints per length the attention
# cluster's verdict, its measured saving (unfused sub-graph against the fused kernel, the
# applier's paired median), its peak-memory drop (clusters.score_bytes, as the report reads it)
# and the whole model's speedup and peak activations before/after. Targets (issue 33, on a quiet
# machine): at 64 the fused attention no slower than the unfused ops; at 512 at least 2x faster
# and the peak activations lower by the score tensors. Asserts nothing; timings on a loaded
# machine are noise.
#   usage: bench/bench_attention.sh [BUILD_DIR]     (env: SEQS, ITERS=10, THREADS=0, PY=python3 with onnx)
set -euo pipefail
build=${1:-build}
fa=$(cd "$build" && pwd)/fuse-advise
py=${PY:-$(cd "$build" && pwd)/pyenv/bin/python3}
[ -x "$py" ] || py=python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp/attn.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
H, D = 12, 64
hid = H * D
rng = np.random.default_rng(0)
inits = [numpy_helper.from_array(np.array([0, 0, H, D], np.int64), "heads"),
         numpy_helper.from_array(np.array([0, 0, hid], np.int64), "hidden"),
         numpy_helper.from_array(np.array(np.sqrt(D), np.float32), "sqrt_d")]
nodes = []
for x in "qkv":
    w = (rng.standard_normal((hid, hid)) * 0.02).astype(np.float32)
    inits.append(numpy_helper.from_array(w, "w" + x))
    nodes += [helper.make_node("MatMul", ["x", "w" + x], [x + "p"]),
              helper.make_node("Reshape", [x + "p", "heads"], [x + "4"]),
              helper.make_node("Transpose", [x + "4"], [x + "t"], perm=[0, 2, 3, 1] if x == "k" else [0, 2, 1, 3])]
nodes += [helper.make_node("MatMul", ["qt", "kt"], ["s"]),
          helper.make_node("Div", ["s", "sqrt_d"], ["ss"]),
          helper.make_node("Add", ["ss", "mask"], ["sm"]),
          helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
          helper.make_node("MatMul", ["p", "vt"], ["o"]),
          helper.make_node("Transpose", ["o"], ["om"], perm=[0, 2, 1, 3]),
          helper.make_node("Reshape", ["om", "hidden"], ["y"])]
g = helper.make_graph(nodes, "bert_attention",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", hid]),
                       helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 1, 1, "sequence"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", hid])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
for s in ${SEQS:-64 512}; do
    out="$tmp/out$s"
    "$fa" run "$tmp/attn.onnx" --shape batch=1 --shape "sequence=$s" --iters "${ITERS:-10}" --threads "${THREADS:-0}" \
        --db "$tmp/b.db" --out "$out" > "$tmp/run$s.txt" 2>&1 || true
    "$py" - "$out/plan.json" "$out/summary.json" "$s" "$tmp/b.db" <<'PY'
import json, sqlite3, statistics, sys
plan, summ, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
db = sqlite3.connect(sys.argv[4])
for c in plan["clusters"]:
    if c["kind"] == "attention":
        meas = c.get("measured_saving_ns")
        # the applier's interleaved rounds of this cluster: unfused and fused sub-graph medians
        rows = db.execute("SELECT subject, latency_ns FROM benchmarks WHERE run_id=? AND plan_id=? AND cluster_id=? "
                          "AND subject IN ('cluster-unfused','cluster-fused')", (plan["run_id"], plan["plan_id"], c["id"])).fetchall()
        u = [r[1] for r in rows if r[0] == "cluster-unfused"]; f = [r[1] for r in rows if r[0] == "cluster-fused"]
        ratio = (f"; unfused {statistics.median(u) / 1e3:.1f} us, fused {statistics.median(f) / 1e3:.1f} us "
                 f"(medians of {len(u)} rounds): {statistics.median(u) / statistics.median(f):.2f}x") if u and f else ""
        print(f"seq {s}: {c['label']}: {c['status']}; measured saving "
              f"{'%.1f us' % (meas / 1e3) if isinstance(meas, (int, float)) else 'n/a'}{ratio}; "
              f"score tensors never written {c['score_bytes'] / 1e6:.2f} MB")
print(f"seq {s}: end to end {json.dumps(summ.get('speedup'))}x; peak activations {json.dumps(summ.get('peak_activation_bytes'))}")
PY
done
