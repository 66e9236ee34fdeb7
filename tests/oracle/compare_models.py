#!/usr/bin/env python3
"""Oracle: run two ONNX models in onnxruntime on the same random inputs and compare outputs.

usage: compare_models.py ORIGINAL.onnx FOLDED.onnx [--rtol R] [--atol A] [--seed S]
Exit 0 when every output matches (|a-b| <= atol + rtol*|b|), 1 on mismatch, 77 when
onnxruntime is not installed (ctest reports the test as skipped, never passed)."""
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}", file=sys.stderr)
    sys.exit(77)


def main():
    args = sys.argv[1:]
    rtol, atol, seed = 1e-4, 1e-5, 0
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--rtol":
            rtol = float(args[i + 1]); i += 2
        elif args[i] == "--atol":
            atol = float(args[i + 1]); i += 2
        elif args[i] == "--seed":
            seed = int(args[i + 1]); i += 2
        else:
            pos.append(args[i]); i += 1
    a_path, b_path = pos
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sa = ort.InferenceSession(a_path, so, providers=["CPUExecutionProvider"])
    sb = ort.InferenceSession(b_path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in sa.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in inp.shape]
        feeds[inp.name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
    oa = sa.run(None, feeds)
    ob = sb.run(None, feeds)
    ok = True
    for i, (x, y) in enumerate(zip(oa, ob)):
        err = np.abs(x - y)
        lim = atol + rtol * np.abs(x)
        bad = int((err > lim).sum())
        scale = float(np.abs(x).max()) if x.size else 0.0
        print(f"output {i}: shape {list(x.shape)}, max|diff| {float(err.max()) if x.size else 0:.3g}, "
              f"max|ref| {scale:.3g}, mismatches {bad}")
        ok &= bad == 0
    print("MATCH" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
