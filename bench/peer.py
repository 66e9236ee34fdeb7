#!/usr/bin/env python3
"""One peer engine, alone in its own process, timing one model (bench/bench_e2e.sh runs it).

    peer.py ENGINE MODEL.onnx --threads T --iters N [--warmup W] [--batch B] [--seq S] [--survey NAME]

ENGINE is one of
  ort-none       ONNX Runtime, graph optimisations disabled (ORT_DISABLE_ALL), its defaults otherwise
  ort-all        ONNX Runtime, all graph optimisations (ORT_ENABLE_ALL), its defaults otherwise
                 (intra-op threads spin after each run: ORT's default, kept)
  torch-eager    PyTorch eager on the same model rebuilt from its config (a survey export's NAME,
                 or zoo:resnet50 / zoo:mobilenetv2 as torchvision's models), denormals flushed
  torch-compile  the same module through torch.compile (Inductor, CPU), compiled before timing
Each engine runs with its own defaults but the thread count, and nothing else is alive in this
process. Prints one JSON line: {"engine", "samples_ms", "warmup", "compile_s"}; exit 77 when the
engine is not installed or cannot build this model (the caller reports it as not measured).
"""
import argparse
import json
import os
import sys
import time


def ort_session(path, level, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = level
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_feeds(sess, batch, seq):
    return ort_feeds_dims(sess, {"batch": batch, "sequence": seq})


def ort_feeds_dims(sess, dims):
    """Deterministic inputs for sess: symbolic dims from dims (NAME -> value; others 1), integer
    inputs (token ids, masks) 0 or 1, float inputs uniform in [-1, 1]."""
    import numpy as np
    rng = np.random.default_rng(1)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 2, shape).astype(np.int64 if "int64" in i.type else np.int32)
        else:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return feeds


def torch_module(model, survey, batch, seq):
    """The torch module and inputs for MODEL: a survey NAME rebuilt by docs/survey/export_models.py's
    own builder (same config, same seed), or a zoo CNN as torchvision builds it."""
    import torch
    if survey:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "docs", "survey"))
        import export_models as em
        m, args, _names, _axes = em.build(survey)
        # the export's inputs at this batch and sequence
        out = []
        for a in args:
            shape = list(a.shape)
            shape[0] = batch
            if a.dtype == torch.int64 and len(shape) > 1:
                shape[1] = seq
                out.append(torch.ones(shape, dtype=torch.int64) if a.max() <= 1 else
                           torch.randint(0, 1000, shape, generator=torch.Generator().manual_seed(1)))
            else:
                out.append(torch.randn(shape))
        return m, tuple(out)
    import torchvision.models as tvm
    ctor = {"zoo:resnet50": tvm.resnet50, "zoo:mobilenetv2": tvm.mobilenet_v2}.get(model)
    if ctor is None:
        raise KeyError(f"no torch module for {model}: give --survey NAME")
    torch.manual_seed(0)
    return ctor(weights=None).eval(), (torch.randn(batch, 3, 224, 224),)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine", choices=["ort-none", "ort-all", "torch-eager", "torch-compile"])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--iters", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--survey", default="")
    a = ap.parse_args()
    compile_s = 0.0
    if a.engine.startswith("ort"):
        try:
            import onnxruntime as ort
        except ImportError:
            sys.exit(77)
        level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL if a.engine == "ort-none" else \
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        s = ort_session(a.model, level, a.threads)
        feeds = ort_feeds(s, a.batch, a.seq)
        step = lambda: s.run(None, feeds)  # noqa: E731
    else:
        try:
            import torch
            m, args = torch_module(a.model, a.survey, a.batch, a.seq)
        except (ImportError, KeyError) as e:
            print(f"peer: {e}", file=sys.stderr)
            sys.exit(77)
        torch.set_num_threads(a.threads)
        torch.set_flush_denormal(True)  # random weights: denormals would time the FPU's slow path
        if a.engine == "torch-compile":
            m = torch.compile(m)
        t0 = time.perf_counter()
        with torch.inference_mode():
            m(*args)  # compiles (torch-compile) or warms up
        compile_s = time.perf_counter() - t0

        def step():
            with torch.inference_mode():
                m(*args)
    for _ in range(a.warmup):
        step()
    samples = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        step()
        samples.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"engine": a.engine, "samples_ms": samples, "warmup": a.warmup, "compile_s": compile_s}))


if __name__ == "__main__":
    main()
