#!/usr/bin/env bash
# Random recurrent layers against ONNX Runtime and random two-input einsums against numpy, run
# through `fuse-advise exec`: the shapes that take the recurrent kernel's packed products (a batch
# of 4 or more, 16 or more projection rows), widths that are not multiples of 16, both directions,
# GRU's two reset-gate placements, other activations, clip, sequence_lens and initial states; and
# einsums in every arrangement of batch, M, N and K labels (an M or N label apart from its role's
# run is an outer loop around oneDNN's matmul; an extent-1 label has no role). Fixed seeds; ORT
# with its optimisations disabled refuses layout 1, which the unit tests and the ONNX node suite
# check. Needs the python oracle (FA_PYTHON): 77 without onnx, onnxruntime and numpy.
set -euo pipefail
PY=${FA_PYTHON:-python3}
"$PY" -c "import onnx, onnxruntime, numpy" 2>/dev/null || { echo "SKIP: onnx/onnxruntime not installed for $PY (bash scripts/setup.sh)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$PY" - "$FA_CLI" <<'EOF_PY'
import os, random, subprocess, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
FA = sys.argv[1]
bad = []

def run_ours(path, feeds, n_out, tag):
    ind, od = f"in_{tag}", f"out_{tag}"
    os.makedirs(ind), os.makedirs(od)
    for i, (k, v) in enumerate(feeds.items()):
        open(f"{ind}/input_{i}.pb", "wb").write(numpy_helper.from_array(v, k).SerializeToString())
    r = subprocess.run([FA, "exec", path, "--inputs", ind, "--outputs", od], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr[-300:]
    outs = []
    for i in range(n_out):
        t = onnx.TensorProto()
        t.ParseFromString(open(f"{od}/output_{i}.pb", "rb").read())
        outs.append(numpy_helper.to_array(t))
    return outs, ""

rnd = random.Random(7)
cases = 0
for trial in range(36):
    op = ("GRU", "RNN", "LSTM")[trial % 3]
    G = {"GRU": 3, "RNN": 1, "LSTM": 4}[op]
    S, B = rnd.choice([1, 3, 6, 17]), rnd.choice([1, 2, 4, 5, 8, 9])
    I, H = rnd.choice([3, 16, 35]), rnd.choice([1, 5, 20, 33, 70])
    d = rnd.choice(["forward", "reverse", "bidirectional"])
    D = 2 if d == "bidirectional" else 1
    rs = np.random.RandomState(trial)
    X = rs.randn(S, B, I).astype(np.float32)
    inits = [numpy_helper.from_array((rs.randn(D, G * H, I) * 0.3).astype(np.float32), "W"),
             numpy_helper.from_array((rs.randn(D, G * H, H) * 0.3).astype(np.float32), "R"),
             numpy_helper.from_array((rs.randn(D, 2 * G * H) * 0.2).astype(np.float32), "B"),
             numpy_helper.from_array(rs.randint(1, S + 1, size=B).astype(np.int32), "sl"),
             numpy_helper.from_array((rs.randn(D, B, H) * 0.3).astype(np.float32), "h0")]
    ins, outs = ["X", "W", "R", "B", "sl", "h0"], ["Y", "Yh"]
    attrs = dict(hidden_size=H, direction=d)
    if rnd.random() < 0.3: attrs["clip"] = 1.5
    if op == "GRU": attrs["linear_before_reset"] = trial % 2
    if op == "LSTM":
        inits += [numpy_helper.from_array((rs.randn(D, B, H) * 0.3).astype(np.float32), "c0"),
                  numpy_helper.from_array((rs.randn(D, 3 * H) * 0.2).astype(np.float32), "P")]
        ins, outs = ins + ["c0", "P"], outs + ["Yc"]
    if rnd.random() < 0.3:
        alt = {"Sigmoid": ["HardSigmoid", "Sigmoid"], "Tanh": ["Relu", "Softsign", "Tanh"]}
        base = {"GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[op]
        attrs["activations"] = [rnd.choice(alt[a]) for a in base] * D
    g = helper.make_graph([helper.make_node(op, ins, outs, **attrs)], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(X.shape))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    p = f"r{trial}.onnx"
    onnx.save(m, p)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    ref = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"]).run(None, {"X": X})
    got, err = run_ours(p, {"X": X}, len(outs), f"r{trial}")
    cases += 1
    desc = f"{op} {attrs} S {S} batch {B} I {I} H {H}"
    if got is None:
        bad.append(f"{desc}: exec failed: {err}")
        continue
    for o, a, b in zip(outs, got, ref):
        if a.shape != b.shape or float(np.abs(a - b).max()) > 1e-4 * max(1.0, float(np.abs(b).max())):
            bad.append(f"{desc}: {o} differs from ORT by {float(np.abs(a - b).max()) if a.shape == b.shape else a.shape}")
            break

rnd = random.Random(11)
for trial in range(120):
    letters = list("abcdefghij")
    rnd.shuffle(letters)
    nb, nm, nn, nk = [rnd.randint(0, 2) for _ in range(4)]
    L = letters[:nb + nm + nn + nk]
    bl, ml, nl, kl = L[:nb], L[nb:nb + nm], L[nb + nm:nb + nm + nn], L[nb + nm + nn:]
    size = {l: rnd.choice([1, 2, 3, 5]) for l in L}
    A, Bs, Y = bl + ml + kl, bl + kl + nl, bl + ml + nl
    rnd.shuffle(A), rnd.shuffle(Bs), rnd.shuffle(Y)
    if not A or not Bs:
        continue
    eq = "".join(A) + "," + "".join(Bs) + "->" + "".join(Y)
    rs = np.random.RandomState(trial)
    a = rs.randn(*[size[l] for l in A]).astype(np.float32)
    b = rs.randn(*[size[l] for l in Bs]).astype(np.float32)
    ref = np.einsum(eq, a.astype(np.float64), b.astype(np.float64))
    g = helper.make_graph([helper.make_node("Einsum", ["A", "B"], ["Y"], equation=eq)], "g",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(a.shape)),
                           helper.make_tensor_value_info("B", TensorProto.FLOAT, list(b.shape))],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    p = f"e{trial}.onnx"
    onnx.save(m, p)
    got, err = run_ours(p, {"A": a, "B": b}, 1, f"e{trial}")
    cases += 1
    if got is None:
        bad.append(f"einsum {eq}: exec failed: {err}")
    elif got[0].shape != ref.shape or float(np.abs(got[0] - ref).max()) > 1e-4 * max(1.0, float(np.abs(ref).max())):
        bad.append(f"einsum {eq} {size}: differs from numpy")
print(f"{cases} cases, {len(bad)} wrong")
for line in bad[:20]:
    print("FAIL:", line)
sys.exit(1 if bad else 0)
EOF_PY
