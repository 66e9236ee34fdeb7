#!/bin/bash
# bench/bench_mask_ops.sh — the unfused comparison, logic and cast ops of transformer exports'
# mask and index paths (IsNaN, IsInf, Not, Equal/Less/Greater/LessOrEqual/GreaterOrEqual on float32
# and int64, Where, Cast between float32, int64, int32 and bool) and the attention paths' transposes
# (TransposeHeads: perm 0,2,1,3 of x[batch, SEQ, HEADS, 64]; TransposeKeys: 0,2,3,1, the key's,
# which moves the last axis) against ONNX Runtime, per op: one model per case (x[batch, HEADS, SEQ,
# SEQ] -> Identity -> OP -> y; a bool input made by IsNaN first),
# built here with onnx, then bench/ort_kernels.py on all of them (our per-node medians from
# `fuse-advise run --no-apply` against ORT's own per-node profile with its optimisations disabled,
# in the same window, alternating rounds; 2 threads, each engine with its own wait policy). Prints
# ort_kernels.py's Markdown: per model the class rows, ours against ORT's and the ratio.
# Env: CASES (the case list, names below), HEADS (12), SEQ (128), ITERS (50), ROUNDS (2),
#      THREADS (2), BUILD, PY (the python with onnx and onnxruntime: BUILD/pyenv/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
CLI=$BUILD/fuse-advise
PY=${PY:-$BUILD/pyenv/bin/python3}
CASES=${CASES:-"IsNaN IsInf Not Equal Less Greater LessOrEqual GreaterOrEqual EqualInt64 LessInt64 Where CastFloatInt64 CastFloatInt32 CastInt64Float CastBoolFloat CastFloatBool CastInt64Int32 TransposeHeads TransposeKeys"}
HEADS=${HEADS:-12}
SEQ=${SEQ:-128}
ITERS=${ITERS:-50}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2}
[ -x "$CLI" ] || { echo "bench_mask_ops.sh: build $CLI first" >&2; exit 2; }
"$PY" -c "import onnx, onnxruntime" 2>/dev/null ||
  { echo "bench_mask_ops.sh: $PY lacks onnx/onnxruntime (scripts/setup.sh makes it)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" - "$tmp" "$HEADS" "$SEQ" $CASES <<'PYEOF'
import sys, onnx
from onnx import helper as h, TensorProto as T
d, heads, seq, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
sh = ["batch", heads, seq, seq]
def vi(name, t): return h.make_tensor_value_info(name, t, sh)
def ident(t=T.FLOAT): return [h.make_node("Identity", ["x"], ["a"], name="in")]
cmp = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}
casts = {"CastFloatInt64": (T.FLOAT, T.INT64), "CastFloatInt32": (T.FLOAT, T.INT32),
         "CastInt64Float": (T.INT64, T.FLOAT), "CastBoolFloat": (T.BOOL, T.FLOAT),
         "CastFloatBool": (T.FLOAT, T.BOOL), "CastInt64Int32": (T.INT64, T.INT32)}
for c in cases:
    if c in ("IsNaN", "IsInf"):
        nodes, ins, out = ident() + [h.make_node(c, ["a"], ["y"], name=c.lower())], [vi("x", T.FLOAT)], vi("y", T.BOOL)
    elif c == "Not":  # a bool operand: IsNaN first
        nodes = ident() + [h.make_node("IsNaN", ["a"], ["b"], name="isnan"), h.make_node("Not", ["b"], ["y"], name="not")]
        ins, out = [vi("x", T.FLOAT)], vi("y", T.BOOL)
    elif c in cmp or (c.endswith("Int64") and c[:-5] in cmp):
        op, t = (c, T.FLOAT) if c in cmp else (c[:-5], T.INT64)
        nodes = ident() + [h.make_node(op, ["a", "x2"], ["y"], name=op.lower())]
        ins, out = [vi("x", t), vi("x2", t)], vi("y", T.BOOL)
    elif c == "Where":
        nodes = ident() + [h.make_node("IsNaN", ["a"], ["b"], name="isnan"),
                           h.make_node("Where", ["b", "a", "x2"], ["y"], name="where")]
        ins, out = [vi("x", T.FLOAT), vi("x2", T.FLOAT)], vi("y", T.FLOAT)
    elif c in ("TransposeHeads", "TransposeKeys"):
        perm = [0, 2, 1, 3] if c == "TransposeHeads" else [0, 2, 3, 1]
        xs = ["batch", seq, heads, 64]
        nodes = [h.make_node("Identity", ["x"], ["a"], name="in"),
                 h.make_node("Transpose", ["a"], ["y"], perm=perm, name="transpose")]
        ins = [h.make_tensor_value_info("x", T.FLOAT, xs)]
        out = h.make_tensor_value_info("y", T.FLOAT, [xs[p] for p in perm])
    elif c in casts:
        src, dst = casts[c]
        if src == T.BOOL:  # a bool operand: IsNaN first
            nodes = ident() + [h.make_node("IsNaN", ["a"], ["b"], name="isnan"),
                               h.make_node("Cast", ["b"], ["y"], to=dst, name="cast")]
            ins = [vi("x", T.FLOAT)]
        else:
            nodes = ident() + [h.make_node("Cast", ["a"], ["y"], to=dst, name="cast")]
            ins = [vi("x", src)]
        out = vi("y", dst)
    else:
        sys.exit(f"bench_mask_ops.sh: unknown case {c}")
    m = h.make_model(h.make_graph(nodes, c, ins, [out]), opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{c}.onnx")
PYEOF
echo "# bench_mask_ops: $(date -u '+%F %T') UTC, $(nproc) cores, [1, $HEADS, $SEQ, $SEQ], threads $THREADS, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
models=()
for c in $CASES; do models+=("$tmp/$c.onnx"); done
"$PY" "$here/bench/ort_kernels.py" "$CLI" "${models[@]}" --iters "$ITERS" --threads "$THREADS" --rounds "$ROUNDS"
