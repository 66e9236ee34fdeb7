#!/usr/bin/env python3
"""Per-kernel comparison of fuse-advise's unfused baseline with ONNX Runtime's own per-node
profile, grouped by op kind and shape class (issue 18: where the time of small CNNs goes).

    python bench/ort_kernels.py build/fuse-advise MODEL.onnx... [--iters 50] [--threads 2] [--rounds 2] [--fused]
                                [--shape NAME=V]...

For each model, in the same window and alternating round by round: `fuse-advise run MODEL
--no-apply` (per-op medians from its run database) and ONNX Runtime with
SessionOptions.enable_profiling, once with ORT_DISABLE_ALL (the unfused graph: its nodes are the
model's, joined by node name) and once with ORT_ENABLE_ALL (ORT's fused graph; reported by its
own op kinds). Symbolic dims are bound to 1 (batch 1) unless --shape NAME=V binds them (both sides,
`fuse-advise run --shape NAME=V`); integer inputs are 0/1 (token ids, masks). Each engine
waits with its own default (ORT's intra-op threads spin; ours spin GOMP_SPINCOUNT=1000 times,
docs/runtime.md "Threads and waiting"); no ORT session is alive while ours runs (each profile is
taken in a session created and released between our runs).

--fused compares the plans instead: `fuse-advise run MODEL` (applied; its fused model's trace,
the run tagged fused-of:<id>) against ORT_ENABLE_ALL's profile, each side per kernel kind (ours:
the kernel's name up to its first '(' — a fused kernel's label such as conv+add+relu; ORT: its
op kind, FusedConv, NchwcConv, ...), with each side's count, summed per-kernel medians and
iteration median, so the largest gaps between the two fused graphs show first.

Prints Markdown: per model, one row per class — nodes, sum of our per-node medians, sum of ORT's
(disabled) per-node medians, the ratio, and the kernels we ran; then iteration medians. Timings
on a shared machine are noisy: the load is printed with every model.
"""
import argparse, collections, glob, json, os, re, sqlite3, statistics, subprocess, sys, tempfile

import onnx
import onnxruntime as ort
from onnx import numpy_helper, shape_inference

from peer import ort_feeds_dims  # bench/peer.py, beside this script


def bind_batch(model, dims=None):
    """Symbolic dims -> their --shape value (1 unless given), then ONNX shape inference: every
    value's static shape by name."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for v in list(m.graph.input) + list(m.graph.output):
        for d in v.type.tensor_type.shape.dim:
            if d.HasField("dim_param") or not d.HasField("dim_value"):
                bound = (dims or {}).get(d.dim_param, 1)
                d.Clear()
                d.dim_value = bound
    m = shape_inference.infer_shapes(m)
    shapes = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    return m, shapes


def shape_class(node, shapes, inits):
    """A class name for node: op kind plus the shape features that pick a kernel."""
    op = node.op_type
    out = shapes.get(node.output[0], [])
    spatial1 = len(out) == 4 and out[2] * out[3] == 1
    if op == "Conv":
        w = shapes.get(node.input[1], [])
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        k = "x".join(str(d) for d in w[2:]) if len(w) >= 3 else "?"
        if group > 1 and len(w) > 1 and w[1] == 1:
            kind = f"depthwise {k}"
        elif group > 1:
            kind = f"grouped {k}"
        elif len(w) > 1 and w[1] <= 4 and not spatial1:  # an image's 3 channels (an SE expand may read 4)
            kind = f"stem {k}"
        else:
            kind = f"{k}"
        return f"Conv {kind}" + (" on [N,C,1,1] (SE)" if spatial1 else "")
    if op in ("Mul", "Add", "Sub", "Div"):
        ins = [shapes.get(i, []) for i in node.input]
        bc = any(s != out for s in ins)
        return f"{op}" + (" broadcast" if bc else "") + (" [N,C,1,1]" if spatial1 else "")
    if op in ("Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Clip"):
        return op + (" [N,C,1,1]" if spatial1 else "")
    return op


def ort_profile(path, level, feeds, iters, threads, tmp):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tmp, "ort")
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, feeds)
    import time
    it = []
    for _ in range(iters):
        t0 = time.perf_counter()
        s.run(None, feeds)
        it.append((time.perf_counter() - t0) * 1e3)
    prof = s.end_profiling()
    ev = json.load(open(prof))
    os.remove(prof)
    per = collections.defaultdict(list)
    kind = {}
    for e in ev:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            n = e["name"][: -len("_kernel_time")]
            per[n].append(e["dur"] / 1e3)  # us -> ms
            kind[n] = e.get("args", {}).get("op_name", "?")
    # the warm-up runs are profiled too: keep the last `iters` samples of each node
    med = {n: statistics.median(v[-iters:]) for n, v in per.items()}
    return med, kind, statistics.median(it)


def symbolic_inputs(path):
    """The names of the graph inputs' symbolic dims (each bound by `run --shape NAME=V`, 1 unless
    --shape gives V)."""
    m = onnx.load(path, load_external_data=False)
    return sorted({d.dim_param for v in m.graph.input for d in v.type.tensor_type.shape.dim if d.dim_param})


def feeds_of(path, dims):
    """Deterministic inputs of the model at path, as bench_e2e.sh's peers get them
    (peer.ort_feeds_dims): symbolic dims from dims, the others 1."""
    return ort_feeds_dims(ort.InferenceSession(path, providers=["CPUExecutionProvider"]), dims)


def ours(fa, path, iters, threads, tmp, fused=False, dims=None):
    db = os.path.join(tmp, "fa.db")
    dims = dims or {}
    shape = [a for n in symbolic_inputs(path) for a in ("--shape", f"{n}={dims.get(n, 1)}")]
    p = subprocess.run([fa, "run", path, *shape, *([] if fused else ["--no-apply"]), "--iters", str(iters),
                        "--threads", str(threads), "--db", db, "--out", os.path.join(tmp, "out")], capture_output=True,
                       text=True)
    if p.returncode:
        sys.exit(f"fuse-advise run {path} failed: {p.stderr[-400:]}")
    c = sqlite3.connect(db)
    if fused:  # the fused model's own trace: the run tagged fused-of:<the model run>
        row = c.execute("select id from runs where kind='fused' order by id desc limit 1").fetchone()
        if not row:
            sys.exit(f"fuse-advise run {path}: no fused model trace (no cluster accepted?)")
        rid = row[0]
    else:
        rid = c.execute("select max(id) from runs").fetchone()[0]
    per = collections.defaultdict(list)
    names = collections.defaultdict(set)
    for name, node_name, s, e in c.execute(
            "select name, node_name, start_ns, end_ns from kernels where run_id=? and node>=0", (rid,)):
        per[node_name].append((e - s) / 1e6)
        # the kind: the name without its parenthesised layouts and choices, so that a convolution
        # reordered inside ("dnnl:reorder(nChw16c>nhwc)+convolution+post-ops+reorder(nhwc>nChw16c)")
        # counts as that, not as a reorder
        names[node_name].add(re.sub(r"\([^)]*\)", "", name))
    iter_ms = c.execute("select iter_median_ns from runs where id=?", (rid,)).fetchone()[0] / 1e6
    c.close()
    os.remove(db)
    return {n: statistics.median(v) for n, v in per.items()}, names, iter_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fa")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fused", action="store_true", help="our applied plan against ORT_ENABLE_ALL, per kernel kind")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=V",
                    help="bind symbolic dim NAME to V on both sides (sequence=64); the others are 1")
    a = ap.parse_args()
    a.dims = {}
    for kv in a.shape:
        k, _, v = kv.partition("=")
        if not k or not v.isdigit() or int(v) < 1:
            sys.exit(f"--shape {kv}: expected NAME=V with V a positive integer")
        a.dims[k] = int(v)
    if a.fused:
        for path in a.models:
            compare_fused(a, path)
        return
    for path in a.models:
        model = onnx.load(path)
        m, shapes = bind_batch(model, a.dims)
        inits = {t.name for t in model.graph.initializer}
        cls = {}
        model_names = {n.name for n in model.graph.node if n.name}
        for n in model.graph.node:
            if n.op_type not in ("Identity", "Constant") and n.name:
                cls[n.name] = shape_class(n, shapes, inits)
        feeds = feeds_of(path, a.dims)
        U, N, A, Ui, Ni, Ai, kern, akind, nkind = [], [], [], [], [], [], collections.defaultdict(set), {}, {}
        load = []
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(a.rounds):
                load.append(os.getloadavg()[0])
                u, kn, ui = ours(a.fa, path, a.iters, a.threads, tmp, dims=a.dims)
                nm, nk, ni = ort_profile(path, ort.GraphOptimizationLevel.ORT_DISABLE_ALL, feeds, a.iters, a.threads, tmp)
                am, ak, ai = ort_profile(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, feeds, a.iters, a.threads, tmp)
                U.append(u); N.append(nm); A.append(am); Ui.append(ui); Ni.append(ni); Ai.append(ai)
                akind.update(ak)
                nkind.update(nk)
                for k, v in kn.items():
                    kern[k] |= v
            load.append(os.getloadavg()[0])

        def med(ds, n):
            v = [d[n] for d in ds if n in d]
            return statistics.median(v) if v else 0.0
        rows = collections.defaultdict(lambda: [0, 0.0, 0.0, set()])
        for n, c in cls.items():
            r = rows[c]
            r[0] += 1
            r[1] += med(U, n)
            r[2] += med(N, n)
            r[3] |= kern.get(n, set())
        # nodes ORT made itself (a function op such as HardSwish expanded into HardSigmoid + Mul,
        # unnamed): one row per op kind, ORT's time only
        for n in set().union(*N):
            if n not in cls and n not in model_names:
                r = rows[f"(ORT's {nkind.get(n, '?')} of an expanded function op)"]
                r[0] += 1
                r[2] += med(N, n)
        name = os.path.basename(path)
        print(f"\n### {name}, batch 1, {a.threads} threads, {a.iters} iterations x {a.rounds} rounds "
              f"(1-min load {' / '.join(f'{x:.1f}' for x in load)})\n")
        print("| class | nodes | ours ms | ORT-disabled ms | ours / ORT | our kernels |")
        print("|---|---|---|---|---|---|")
        tu = tn = 0.0
        for c, (k, u, nn, ks) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
            tu += u
            tn += nn
            ratio = f"{u / nn:.2f}" if nn > 0 else "-"
            print(f"| {c} | {k} | {u:.3f} | {nn:.3f} | {ratio} | {', '.join(sorted(ks))} |")
        print(f"| **sum of per-node medians** | {len(cls)} | {tu:.3f} | {tn:.3f} | {tu / tn:.2f} | |")
        print(f"| **iteration median** | | {statistics.median(Ui):.3f} | {statistics.median(Ni):.3f} | "
              f"{statistics.median(Ui) / statistics.median(Ni):.2f} | |")
        ag = collections.defaultdict(lambda: [0, 0.0])
        for n in set().union(*A):
            ag[akind.get(n, "?")][0] += 1
            ag[akind.get(n, "?")][1] += med(A, n)
        print(f"\nORT-all (its fused graph), per op kind: " + ", ".join(
            f"{k} {c}x {t:.3f} ms" for k, (c, t) in sorted(ag.items(), key=lambda kv: -kv[1][1]))
              + f"; iteration median {statistics.median(Ai):.3f} ms")


def compare_fused(a, path):
    """Our applied plan's fused-model trace against ORT_ENABLE_ALL's profile, per kernel kind."""
    model = onnx.load(path)
    feeds = feeds_of(path, a.dims)
    del model
    F, A, Fi, Ai, fkind, akind, load = [], [], [], [], {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            load.append(os.getloadavg()[0])
            f, kn, fi = ours(a.fa, path, a.iters, a.threads, tmp, fused=True, dims=a.dims)
            am, ak, ai = ort_profile(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, feeds, a.iters, a.threads, tmp)
            F.append(f); A.append(am); Fi.append(fi); Ai.append(ai)
            for k, v in kn.items():
                fkind[k] = sorted(v)[0]
            akind.update(ak)
        load.append(os.getloadavg()[0])

    def per_kind(ds, kinds):
        out = collections.defaultdict(lambda: [0, 0.0])
        for n in set().union(*ds):
            v = [d[n] for d in ds if n in d]
            out[kinds.get(n, "?")][0] += 1
            out[kinds.get(n, "?")][1] += statistics.median(v)
        return out
    fk, ak = per_kind(F, fkind), per_kind(A, akind)
    print(f"\n### {os.path.basename(path)}, fused plans, batch 1, {a.threads} threads, {a.iters} iterations x "
          f"{a.rounds} rounds (1-min load {' / '.join(f'{x:.1f}' for x in load)})\n")
    print("| ours: kernel kind | count | ms | | ORT-all: op kind | count | ms |")
    print("|---|---|---|---|---|---|---|")
    fr = sorted(fk.items(), key=lambda kv: -kv[1][1])
    ar = sorted(ak.items(), key=lambda kv: -kv[1][1])
    for i in range(max(len(fr), len(ar))):
        l = f"{fr[i][0]} | {fr[i][1][0]} | {fr[i][1][1]:.3f}" if i < len(fr) else " | | "
        rr = f"{ar[i][0]} | {ar[i][1][0]} | {ar[i][1][1]:.3f}" if i < len(ar) else " | | "
        print(f"| {l} | | {rr} |")
    tf, ta = sum(v[1] for v in fk.values()), sum(v[1] for v in ak.values())
    print(f"| **sum of per-kernel medians** | {sum(v[0] for v in fk.values())} | {tf:.3f} | | | "
          f"{sum(v[0] for v in ak.values())} | {ta:.3f} |")
    print(f"| **iteration median** | | {statistics.median(Fi):.3f} | | | | {statistics.median(Ai):.3f} |")


if __name__ == "__main__":
    main()
