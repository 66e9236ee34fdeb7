#!/usr/bin/env python3
"""tests/conformance/onnx_dtype_sweep — every element type an op's ONNX schema allows, through `exec`.

ONNX's node suite mostly tests float32. This sweep takes every single-node case of the suite
(onnx.backend.test.case.node.collect_testcases), and for the type constraint of the node's first
input (its "T") makes one variant per other element type the schema allows there: the inputs
bound to T converted (integers scaled up so that products exceed float32's 24-bit mantissa,
which a float32 computation would round), the expected outputs recomputed with ONNX's reference
evaluator (onnx.reference.ReferenceEvaluator; variants it cannot run are skipped): for
float16/bfloat16 in float64 (or float32) and rounded once to the type, outputs not bound to T
in the case's own type. Each variant
runs through `fuse-advise exec` and must be either refused with a message or answered right
(outputs compared as onnx_node_suite.py does; integers exactly, or within 0.5 of the exact real
result where that is a half-way value two exact float64 evaluation orders round apart; integer
variants whose exact result overflows the type are skipped: ONNX leaves that undefined, numpy
wraps). A wrong answer or a crash fails:
an element type an op does not implement must be refused, never computed wrongly.

Exit 0 none wrong, 1 a wrong answer or crash (each printed), 77 onnx/numpy missing.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import copy
import os
import shutil
import sys
import warnings

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.backend.test.case.node import collect_testcases
    from onnx.reference import ReferenceEvaluator
except ImportError as e:
    print(f"SKIP: python oracle not importable ({e})")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_node_suite import compare, run_case  # noqa: E402  (same runner and comparison)

# element types fuse-advise can hold (graph/graph.h fa_dtype); others are refused at import
TYPES = {
    "tensor(float)": TensorProto.FLOAT, "tensor(double)": TensorProto.DOUBLE,
    "tensor(float16)": TensorProto.FLOAT16, "tensor(bfloat16)": TensorProto.BFLOAT16,
    "tensor(int8)": TensorProto.INT8, "tensor(uint8)": TensorProto.UINT8,
    "tensor(int16)": TensorProto.INT16, "tensor(uint16)": TensorProto.UINT16,
    "tensor(int32)": TensorProto.INT32, "tensor(uint32)": TensorProto.UINT32,
    "tensor(int64)": TensorProto.INT64, "tensor(uint64)": TensorProto.UINT64,
    "tensor(bool)": TensorProto.BOOL,
}
# integer scale: values well inside the type and sums of a few products inside it too (numpy
# wraps on overflow, which ONNX leaves undefined), but products beyond float32's 24-bit mantissa
SCALE = {TensorProto.INT8: 20, TensorProto.UINT8: 40, TensorProto.INT16: 100, TensorProto.UINT16: 200,
         TensorProto.INT32: 3000, TensorProto.UINT32: 3000, TensorProto.INT64: 3000000, TensorProto.UINT64: 6000000}
LOW = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def convert(arr: np.ndarray, to: int) -> np.ndarray:
    npt = helper.tensor_dtype_to_np_dtype(to)
    a = np.asarray(arr)
    if to == TensorProto.BOOL:
        return (a.astype(np.float64) > 0) if a.dtype != np.bool_ else a
    if to in SCALE:
        f = a.astype(np.float64)
        if a.dtype.kind == "f":
            f = np.round(f * SCALE[to])
        info = np.iinfo(npt)
        if info.min == 0:
            f = np.abs(f)
        return np.clip(f, info.min, info.max).astype(npt)
    return a.astype(np.float64).astype(npt)


def variants(case):
    """(name, model, inputs, type, hi, original output types, T-bound outputs) for each other
    allowed element type of each type constraint that binds a graph input, one constraint at
    a time (names: CASE__TYPE for the first input's constraint, CASE__PARAM_TYPE for others)."""
    g = case.model.graph
    if len(g.node) != 1 or len(case.data_sets) != 1:
        return []
    node = g.node[0]
    opset = max((o.version for o in case.model.opset_import if o.domain == node.domain), default=0)
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:
        return []
    inputs, _ = case.data_sets[0]
    if not inputs or any(not isinstance(v, np.ndarray) or v.dtype.kind not in "fiub" for v in inputs):
        return []
    if not schema.inputs or len(g.input) != len(inputs):
        return []
    cons = {c.type_param_str: c for c in schema.type_constraints}
    present = [x for x in node.input]
    gi = {name: i for i, name in enumerate(present) if name}
    graph_pos = {vi.name: k for k, vi in enumerate(g.input)}

    def bound(formals, n, tparam):  # formal position, variadic last
        out = []
        for i in range(n):
            f = formals[min(i, len(formals) - 1)] if formals else None
            out.append(f is not None and f.type_str == tparam)
        return out

    params = []
    for f in schema.inputs:
        if f.type_str in cons and f.type_str not in params:
            params.append(f.type_str)
    orig_out = {vo.name: vo.type.tensor_type.elem_type for vo in g.output}
    # outputs whose free type parameter the spec infers from an input's: DequantizeLinear-23's
    # y (T3) is x_scale's type (T2) unless output_dtype says otherwise
    follows = {("DequantizeLinear", "T3"): "T2"}
    res = []
    for pi, tparam in enumerate(params):
        in_bound = bound(schema.inputs, len(present), tparam)
        bound_inputs = [graph_pos[n] for i, n in enumerate(present) if n and in_bound[i] and n in graph_pos]
        if not bound_inputs:
            continue
        cur = g.input[bound_inputs[0]].type.tensor_type.elem_type
        out_bound = bound(schema.outputs, len(node.output), tparam)
        for k, f in enumerate(schema.outputs[:len(node.output)]):
            if follows.get((node.op_type, f.type_str)) == tparam and not any(a.name == "output_dtype" for a in node.attribute):
                out_bound[k] = True
        t_out = {name for k, name in enumerate(node.output) if name and k < len(out_bound) and out_bound[k]}
        allowed = {TYPES.get(t) for t in cons[tparam].allowed_type_strs}
        for ts in cons[tparam].allowed_type_strs:
            to = TYPES.get(ts)
            if to is None or to == cur:
                continue
            m = copy.deepcopy(case.model)
            feeds = []
            for k, vi in enumerate(m.graph.input):
                pos = gi.get(vi.name)
                if pos is not None and in_bound[pos]:
                    vi.type.tensor_type.elem_type = to
                    feeds.append(convert(inputs[k], to))
                else:
                    feeds.append(inputs[k])
            for vo in m.graph.output:
                if vo.name in t_out:
                    vo.type.tensor_type.elem_type = to
            # float16/bfloat16: the expected value is the float64 (else float32) result rounded
            # once, what computing in float32 and rounding gives; the reference evaluator rounds
            # after every numpy step, which is not the op's definition. Integers: the float64
            # run tells an overflow (undefined) from a wrong answer.
            hi = None
            if to in LOW or to in SCALE:
                hi = TensorProto.DOUBLE if TensorProto.DOUBLE in allowed else TensorProto.FLOAT
                if to in SCALE and TensorProto.DOUBLE not in allowed:
                    hi = None
            name = f"{case.name}__{ts[7:-1]}" if pi == 0 else f"{case.name}__{tparam}_{ts[7:-1]}"
            res.append((name, m, feeds, to, hi, orig_out, t_out))
    return res


class Overflow(Exception):
    """The integer result does not fit its type: ONNX leaves it undefined (numpy wraps)."""


def run_as(m, feeds, frm, hi):
    """The reference's outputs for model m with its `frm`-typed values computed as `hi` (None:
    as they are)."""
    run_m, run_feeds = m, feeds
    if hi is not None:
        run_m = copy.deepcopy(m)
        for vi in list(run_m.graph.input) + list(run_m.graph.output):
            if vi.type.tensor_type.elem_type == frm:
                vi.type.tensor_type.elem_type = hi
        fnp, hnp = helper.tensor_dtype_to_np_dtype(frm), helper.tensor_dtype_to_np_dtype(hi)
        run_feeds = [f.astype(hnp) if f.dtype == fnp else f for f in feeds]
    outs = ReferenceEvaluator(run_m).run(None, {vi.name: v for vi, v in zip(run_m.graph.input, run_feeds)})
    if any(not isinstance(o, np.ndarray) for o in outs):
        raise TypeError("non-tensor output")
    return outs


def run_as_float64(m, feeds):
    """The reference's outputs with every integer input and output computed as float64."""
    run_m = copy.deepcopy(m)
    for vi in list(run_m.graph.input) + list(run_m.graph.output):
        if vi.type.tensor_type.elem_type in SCALE:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    run_feeds = [f.astype(np.float64) if f.dtype.kind in "iu" else f for f in feeds]
    return ReferenceEvaluator(run_m).run(None, {vi.name: v for vi, v in zip(run_m.graph.input, run_feeds)})


def reference(m, feeds, to, hi, orig_out, t_out):
    """Expected outputs of variant m (see variants); raises when the reference cannot run it,
    Overflow when an integer variant's exact (float64) result leaves its type's range."""
    exact = {}
    if to in SCALE:
        outs = run_as(m, feeds, to, None)
        try:
            exact_outs = run_as(m, feeds, to, hi) if hi is not None else []
        except Exception:
            exact_outs = []  # no float64 form to compare with: no overflow check
        try:  # every integer value as float64: an integer output the varied input overflows
            wide = run_as_float64(m, feeds)
        except Exception:
            wide = []
        for vo, e in zip(m.graph.output, wide):
            ot = to if vo.name in t_out else orig_out[vo.name]
            if ot in SCALE:
                info = np.iinfo(helper.tensor_dtype_to_np_dtype(ot))
                ev = np.asarray(e, dtype=np.float64)
                if ev.size and (not np.all(np.isfinite(ev)) or ev.min() < info.min or ev.max() > info.max):
                    raise Overflow(vo.name)
        for k, (vo, e) in enumerate(zip(m.graph.output, exact_outs)):
            ot = to if vo.name in t_out else orig_out[vo.name]
            if ot not in SCALE:
                continue
            info = np.iinfo(helper.tensor_dtype_to_np_dtype(ot))
            ev = np.asarray(e, dtype=np.float64)
            if ev.size and (not np.all(np.isfinite(ev)) or ev.min() < info.min or ev.max() > info.max):
                raise Overflow(vo.name)
            if vo.name in t_out:
                exact[k] = ev
    else:
        outs = run_as(m, feeds, to, hi)
    res = []
    for vo, o in zip(m.graph.output, outs):
        want = to if vo.name in t_out else orig_out[vo.name]
        res.append(np.asarray(o).astype(helper.tensor_dtype_to_np_dtype(want)))
    return res, exact


# Ops whose reference computes with float32 numbers even for float64/integer data, so its
# integer results carry float32 relative error: Resize's cubic weights use the attribute
# cubic_coeff_a, a numpy float32 scalar, and numpy >= 2 keeps float32 * python float in float32
# (NEP 50). Their integer outputs are compared at a relative 1e-5 (the cubic sum cancels) instead of exactly.
REFERENCE_FLOAT32 = {"Resize"}


def float32_reference_close(d: str, model) -> bool:
    if not any(nd.op_type in REFERENCE_FLOAT32 for nd in model.graph.node):
        return False
    k = 0
    while os.path.exists(os.path.join(d, "test_data_set_0", f"output_{k}.pb")):
        want = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "test_data_set_0", f"output_{k}.pb")))
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "out_0", f"output_{k}.pb")))
        if got.shape != want.shape or not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1):
            return False
        k += 1
    return True


def rounding_only(d: str, exact: dict) -> bool:
    """True when every integer output differing from the reference is within 0.5 (plus float64
    rounding) of the exact real result: a half-way value rounded the other way after a
    different but equally exact float64 evaluation order (Resize's separable passes)."""
    if not exact:
        return False
    for k, ev in exact.items():
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "out_0", f"output_{k}.pb"))).astype(np.float64)
        if got.shape != ev.shape or not np.all(np.abs(got - ev) <= 0.5 + 1e-9 * np.abs(ev)):
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--filter")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    cases = collect_testcases()
    os.makedirs(a.work, exist_ok=True)
    todo = []
    skipped = overflow = 0
    for case in cases:
        if a.filter and a.filter not in case.name:
            continue
        for name, m, feeds, to, hi, orig_out, t_out in variants(case):
            try:
                outs, exact = reference(m, feeds, to, hi, orig_out, t_out)
            except Overflow:
                overflow += 1
                continue
            except Exception:
                skipped += 1
                continue
            for vo, o in zip(m.graph.output, outs):
                vo.type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(o.dtype)
            d = os.path.join(a.work, name)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.join(d, "test_data_set_0"))
            onnx.save(m, os.path.join(d, "model.onnx"))
            for k, (vi, v) in enumerate(zip(m.graph.input, feeds)):
                with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(v, vi.name).SerializeToString())
            for k, (vo, v) in enumerate(zip(m.graph.output, outs)):
                with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(v, vo.name).SerializeToString())
            todo.append({"name": name, "dir": d, "n_sets": 1, "rtol": 1e-3, "atol": 1e-7, "op": "",
                         "non_tensor": None, "exact": exact, "to": to, "model": m})
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = {pool.submit(run_case, a.cli, c, 120.0): c for c in todo}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            out, why = f.result()
            if out == "wrong" and rounding_only(c["dir"], c["exact"]):
                out, why = "pass", "integer rounding of a half-way value"
            elif out == "wrong" and c["to"] in SCALE and float32_reference_close(c["dir"], c["model"]):
                out, why = "pass", "within the reference's float32 error"
            results[c["name"]] = (out, why)
    counts: dict[str, int] = {}
    bad = []
    for name in sorted(results):
        out, why = results[name]
        counts[out] = counts.get(out, 0) + 1
        if out in ("wrong", "crash"):
            bad.append(f"{out.upper()} {name}: {why}")
    print(f"dtype sweep: {len(results)} variants ("
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"), {skipped} the reference cannot run, {overflow} overflow their integer type (undefined)")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
