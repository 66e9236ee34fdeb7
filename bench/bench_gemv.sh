#!/bin/bash
# bench/bench_gemv.sh — batch-1 products with constant weights (runtime/cpu/gemv.c) against ONNX
# Runtime, per node: one model per weight order and shape, x[batch, K] -> Gemm(transB=1, W[N, K],
# bias) or MatMul(W[K, N]) -> y, batch bound to 1 by ort_kernels.py. With FLUSH=1 (the default)
# each model also adds a 64 MiB graph input to itself (a second output), which evicts the weights
# from the caches between iterations, as the rest of a network does before its classifier; the
# product's own row is the one to read. bench/ort_kernels.py runs them: our per-node medians from
# `fuse-advise run --no-apply` against ORT's per-node profile with its optimisations disabled, in
# one window, alternating rounds, 2 threads, each engine with its own wait policy.
# Env: SHAPES ("1280x1000 576x1024 768x3072 3072x768": K x N), FLUSH (1), ITERS (30), ROUNDS (2),
#      THREADS (2), BUILD, PY (python with onnx and onnxruntime: BUILD/pyenv/bin/python3).
# The previous build (BUILD=<its build folder>) gives the oneDNN figures the gemv replaced.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
CLI=$BUILD/fuse-advise
PY=${PY:-$BUILD/pyenv/bin/python3}
SHAPES=${SHAPES:-"1280x1000 576x1024 768x3072 3072x768"}
FLUSH=${FLUSH:-1}
ITERS=${ITERS:-30}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2}
[ -x "$CLI" ] || { echo "bench_gemv.sh: build $CLI first" >&2; exit 2; }
"$PY" -c "import onnx, onnxruntime" 2>/dev/null ||
  { echo "bench_gemv.sh: $PY lacks onnx/onnxruntime (scripts/setup.sh makes it)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" - "$tmp" "$FLUSH" $SHAPES <<'EOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d, flush, shapes = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
rng = np.random.default_rng(0)
for s in shapes:
    K, N = (int(v) for v in s.split("x"))
    for kind in ("Gemm", "MatMul"):
        inits, ins = [], [h.make_tensor_value_info("x", T.FLOAT, ["batch", K])]
        outs = [h.make_tensor_value_info("y", T.FLOAT, ["batch", N])]
        if kind == "Gemm":  # PyTorch's Linear: W [N, K], transB = 1, a bias
            inits += [nh.from_array(rng.standard_normal((N, K), dtype=np.float32) * 0.05, "w"),
                      nh.from_array(rng.standard_normal(N, dtype=np.float32), "b")]
            nodes = [h.make_node("Gemm", ["x", "w", "b"], ["y"], name="gemm", transB=1)]
        else:  # GPT-2's Conv1D / a transposed Linear: W [K, N]
            inits += [nh.from_array(rng.standard_normal((K, N), dtype=np.float32) * 0.05, "w")]
            nodes = [h.make_node("MatMul", ["x", "w"], ["y"], name="matmul")]
        if flush:  # 64 MiB through the caches per iteration, not the product's
            ins.append(h.make_tensor_value_info("f", T.FLOAT, [16 << 20]))
            outs.append(h.make_tensor_value_info("f2", T.FLOAT, [16 << 20]))
            nodes.insert(0, h.make_node("Add", ["f", "f"], ["f2"], name="flush"))
        g = h.make_graph(nodes, f"{kind}_{K}x{N}", ins, outs, inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, f"{d}/{kind}_{K}x{N}.onnx")
EOF
echo "# bench_gemv: $(date -u '+%F %T') UTC, $(nproc) cores, shapes $SHAPES, flush $FLUSH, threads $THREADS, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
models=()
for s in $SHAPES; do models+=("$tmp/Gemm_$s.onnx" "$tmp/MatMul_$s.onnx"); done
"$PY" "$here/bench/ort_kernels.py" "$CLI" "${models[@]}" --iters "$ITERS" --threads "$THREADS" --rounds "$ROUNDS"
