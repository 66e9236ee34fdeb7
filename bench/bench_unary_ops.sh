#!/bin/bash
# bench/bench_unary_ops.sh — the unfused float32 unary ops against ONNX Runtime, per op: one model
# per op (x[batch, ROWS, COLS] -> Identity -> OP -> y, batch bound to 1 by ort_kernels.py; Abs
# instead of Identity before Log and Sqrt, keeping their inputs in the domain),
# built here with onnx, then bench/ort_kernels.py on all of them (our per-node medians from
# `fuse-advise run --no-apply` against ORT's own per-node profile with its optimisations disabled,
# in the same window, alternating rounds; 2 threads, each engine with its own wait policy). Prints
# ort_kernels.py's Markdown: per model the class rows, ours against ORT's and the ratio.
# Env: OPS (the op list), ROWS (256), COLS (1024), ITERS (50), ROUNDS (2), THREADS (2), BUILD,
#      PY (the python with onnx and onnxruntime: BUILD/pyenv/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
CLI=$BUILD/fuse-advise
PY=${PY:-$BUILD/pyenv/bin/python3}
OPS=${OPS:-"Exp Log Sqrt Sigmoid Tanh Erf Elu Selu Softplus Softsign Mish Sin Cos Floor Ceil Reciprocal HardSigmoid HardSwish"}
ROWS=${ROWS:-256}
COLS=${COLS:-1024}
ITERS=${ITERS:-50}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2}
[ -x "$CLI" ] || { echo "bench_unary_ops.sh: build $CLI first" >&2; exit 2; }
"$PY" -c "import onnx, onnxruntime" 2>/dev/null ||
  { echo "bench_unary_ops.sh: $PY lacks onnx/onnxruntime (scripts/setup.sh makes it)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" - "$tmp" "$ROWS" "$COLS" $OPS <<'EOF'
import sys, onnx
from onnx import helper as h, TensorProto as T
d, rows, cols, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
for op in ops:
    # Abs first for Log and Sqrt only (their domain); the other ops see both signs (Elu, Selu,
    # Softplus take their exp only for some)
    nodes = [h.make_node("Abs", ["x"], ["a"], name="abs")] if op in ("Log", "Sqrt") else \
            [h.make_node("Identity", ["x"], ["a"], name="in")]
    nodes.append(h.make_node(op, ["a"], ["y"], name=op.lower()))
    g = h.make_graph(nodes, op, [h.make_tensor_value_info("x", T.FLOAT, ["batch", rows, cols])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["batch", rows, cols])])
    # Mish is in the default domain from opset 18, HardSwish from 14, the rest earlier
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{op}.onnx")
EOF
echo "# bench_unary_ops: $(date -u '+%F %T') UTC, $(nproc) cores, ${ROWS}x${COLS} floats, threads $THREADS, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
models=()
for op in $OPS; do models+=("$tmp/$op.onnx"); done
"$PY" "$here/bench/ort_kernels.py" "$CLI" "${models[@]}" --iters "$ITERS" --threads "$THREADS" --rounds "$ROUNDS"
