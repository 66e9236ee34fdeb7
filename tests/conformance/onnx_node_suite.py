#!/usr/bin/env python3
"""tests/conformance/onnx_node_suite — ONNX's whole node conformance suite through `fuse-advise exec`.

Generates every node test case from the installed onnx package's own case generators
(onnx.backend.test.case.node.collect_testcases; expected outputs from ONNX's reference
implementation) into a work folder, runs each through `fuse-advise exec MODEL --inputs DIR
--outputs DIR`, compares the outputs the way ONNX's backend test runner does
(onnx.backend.test.runner.Runner.assert_similar_outputs: same shape and dtype,
numpy.testing.assert_allclose with the case's rtol/atol, rtol at least 2**-6 for bfloat16, and
likewise two ulps, 2**-9, for float16; integers and bools exactly), and
checks every outcome against the expected table tests/conformance/onnx-node-expected.tsv.

Outcomes:
  pass        exit 0 and every output matches
  refused     exit 1 with an error message (unsupported op, dtype, attribute value, ...)
  non-tensor  the case feeds or expects a sequence, optional or map value (exec reads and
              writes tensors only); still run, and it must be refused, never answered
  wrong       exit 0 but an output is missing or differs      -- never allowed in the table
  crash       killed by a signal, a sanitizer report, an exit code other than 0/1, or the
              per-case time limit                              -- never allowed in the table

The test fails when any case's outcome (or refusal reason) differs from the table, including a
case that now passes where the table says refused: the table, and the counts in
docs/conformance.md, stay true. `--update` rewrites the table from this run (wrong and crash
outcomes are never written; the run still fails on them).

`--subset FILE` runs only the cases named in FILE (one name per line, '#' comments), for a
quick look while developing; CI runs every case, under the sanitizers too (.ci/run's second
stage runs the whole ctest suite in an ASan+UBSan build, where a sanitizer report is a crash).

Exit: 0 all as expected, 1 a difference, 77 onnx/numpy not importable (ctest: skipped).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper
    from onnx.backend.test.case.node import collect_testcases
except ImportError as e:  # the oracle is a test dependency (scripts/requirements-test.txt)
    print(f"SKIP: python oracle not importable ({e})")
    sys.exit(77)

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ERROR: UndefinedBehaviorSanitizer")


def value_kind(vi: onnx.ValueInfoProto) -> str:
    t = vi.type
    for k in ("tensor_type", "sequence_type", "optional_type", "map_type", "sparse_tensor_type"):
        if t.HasField(k):
            return k.replace("_type", "")
    return "tensor"  # no type given: the data decide


def write_value(path: str, vi: onnx.ValueInfoProto, value) -> None:
    kind = value_kind(vi)
    if kind == "sequence":
        proto = numpy_helper.from_list(value, vi.name)
    elif kind == "optional":
        proto = numpy_helper.from_optional(value, vi.name)
    elif kind == "map":
        proto = numpy_helper.from_dict(value, vi.name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), vi.name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def non_tensor_reason(case) -> str | None:
    g = case.model.graph
    for role, vis in (("input", g.input), ("output", g.output)):
        for vi in vis:
            k = value_kind(vi)
            if k != "tensor":
                return f"{k} {role} '{vi.name}'"
    for inputs, outputs in case.data_sets:
        for role, vals in (("input", inputs), ("output", outputs)):
            for v in vals:
                if isinstance(v, (list, tuple, dict)) or v is None:
                    return f"non-tensor {role} value"
    return None


def generate(work: str, names: set[str] | None, substr: str | None) -> list[dict]:
    """Write every case (or those in `names`, or whose name holds `substr`) under work/NAME;
    return their descriptions."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    out = []
    for case in cases:
        if names is not None and case.name not in names:
            continue
        if substr and substr not in case.name:
            continue
        d = os.path.join(work, case.name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for j, v in enumerate(inputs):
                write_value(os.path.join(ds, f"input_{j}.pb"), g.input[j], v)
            for j, v in enumerate(outputs):
                write_value(os.path.join(ds, f"output_{j}.pb"), g.output[j], v)
        ops = sorted({n.op_type for n in g.node})
        out.append({"name": case.name, "dir": d, "n_sets": len(case.data_sets),
                    "rtol": case.rtol, "atol": case.atol, "op": ",".join(ops) or "-",
                    "non_tensor": non_tensor_reason(case)})
    return out


def compare(got_path: str, want_path: str, rtol: float, atol: float) -> str | None:
    """None when similar (ONNX runner's rule), else a one-line description."""
    want = numpy_helper.to_array(onnx.load_tensor(want_path))
    if not os.path.exists(got_path):
        return "output not written"
    got = numpy_helper.to_array(onnx.load_tensor(got_path))
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype == object:
        return None if np.array_equal(got, want) else "strings differ"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "iub":  # integers and bool exactly (stricter than ONNX's runner)
        if np.array_equal(got, want):
            return None
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        i = int(bad[0])
        return f"{bad.size} of {want.size} elements differ; first at flat index {i}: {got.reshape(-1)[i]} != {want.reshape(-1)[i]}"
    r = rtol
    if want.dtype.name == "bfloat16" or want.dtype.name.startswith("float8") or want.dtype.name.startswith("float4"):
        r = max(rtol, 2 ** -6)  # two bfloat16 ulps, as ONNX's runner
        got, want = got.astype(np.float32), want.astype(np.float32)
    elif want.dtype == np.float16:
        # Two float16 ulps (the runner's bfloat16 rule applied to float16): our float16 ops compute
        # in float32 and round once, the reference rounds after every numpy step, so results differ
        # by an ulp or two where ours is the closer one (docs/conformance.md).
        r = max(rtol, 2 ** -9)
    try:
        np.testing.assert_allclose(got, want, rtol=r, atol=atol)
    except AssertionError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        return "; ".join(lines[1:4])[:300]
    return None


def run_case(cli: str, c: dict, timeout: float) -> tuple[str, str]:
    """Returns (outcome, detail)."""
    d = c["dir"]
    for i in range(c["n_sets"]):
        ds = os.path.join(d, f"test_data_set_{i}")
        outdir = os.path.join(d, f"out_{i}")
        if os.path.exists(outdir):
            shutil.rmtree(outdir)
        cmd = [cli, "exec", os.path.join(d, "model.onnx"), "--inputs", ds, "--outputs", outdir,
               "--threads", "1"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            return "crash", f"ran past the {timeout:.0f} s case limit"
        err = p.stderr
        if any(m in err for m in SANITIZER_MARKS):
            first = next(ln for ln in err.splitlines() if any(m in ln for m in SANITIZER_MARKS))
            return "crash", f"sanitizer: {first.strip()[:200]}"
        if p.returncode < 0:
            return "crash", f"killed by {signal.Signals(-p.returncode).name}"
        if p.returncode == 1:
            msg = ""
            for ln in err.splitlines():
                if ln.startswith("fuse-advise: error: "):
                    msg = ln[len("fuse-advise: error: "):]
            if not msg:
                return "crash", f"exit 1 without an error message: {err.strip()[:200]}"
            msg = msg.replace(d + "/", "").replace(d, "CASE")
            return ("non-tensor" if c["non_tensor"] else "refused"), msg
        if p.returncode != 0:
            return "crash", f"exit {p.returncode}: {err.strip()[-200:]}"
        if c["non_tensor"]:
            return "wrong", f"answered a case with a {c['non_tensor']}"
        k = 0
        while os.path.exists(os.path.join(ds, f"output_{k}.pb")):
            why = compare(os.path.join(outdir, f"output_{k}.pb"), os.path.join(ds, f"output_{k}.pb"),
                          c["rtol"], c["atol"])
            if why:
                return "wrong", f"data set {i} output {k}: {why}"
            k += 1
    return "pass", ""


HEADER = """# ONNX node conformance suite: expected outcome per case (tests/conformance/onnx_node_suite.py).
# Columns (tab-separated): case, op(s), outcome (pass | refused | non-tensor), refusal message.
# Generated with --update from onnx {onnx}; wrong and crash are never allowed here.
"""


def read_rows(path: str) -> dict[str, tuple[str, str, str]]:
    """case -> (ops, outcome, refusal message) of a table."""
    t = {}
    with open(path, encoding="utf-8") as f:
        for ln in f:
            if ln.startswith("#") or not ln.strip():
                continue
            parts = ln.rstrip("\n").split("\t")
            parts += [""] * (4 - len(parts))
            t[parts[0]] = (parts[1], parts[2], parts[3])
    return t


def read_table(path: str) -> dict[str, tuple[str, str]]:
    """case -> (outcome, refusal message) of a table."""
    return {k: (out, msg) for k, (_, out, msg) in read_rows(path).items()}


def table_onnx_version(path: str) -> str | None:
    with open(path, encoding="utf-8") as f:
        for ln in f:
            m = re.search(r"from onnx (\S+);", ln)
            if m:
                return m.group(1)
    return None


ELEMENT_TYPES = {17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
                 21: "uint4", 22: "int4", 23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2"}


def reason_of(outcome: str, msg: str, ops: str) -> tuple[str, str]:
    """(reason class, detail) of a refusal message, for the counts in docs/conformance.md."""
    if outcome == "non-tensor":
        return "sequence, optional or map inputs/outputs (exec reads and writes tensors)", ops
    m = re.search(r"unsupported op ([\w.]+)", msg)
    if m:
        return "op not implemented", m.group(1)
    m = re.search(r"\((\w+)\): attribute '[^']*' holds a subgraph", msg)
    if m:
        return "control flow with subgraphs", m.group(1)
    m = re.search(r"element type (\w+) \((\d+)\) is not supported|data_type \d+ \((\w+)\) is not supported", msg)
    if m:
        return "element type not supported", m.group(1) or m.group(3)
    m = re.search(r"element type (\d+) is not supported", msg)
    if m:
        t = int(m.group(1))
        return "element type not supported", ELEMENT_TYPES.get(t, f"type {t}")
    if "dtype string" in msg or "string" in msg and "not supported" in msg:
        return "element type not supported", "string"
    m = re.search(r"\((\w+)\): attribute '(\w+)' = ([^ ]+) is not supported", msg)
    if m:
        return "attribute value not implemented", f"{m.group(1)} {m.group(2)}={m.group(3)}"
    m = re.search(r"\((\w+)\): (\w+)=(\S+) is not implemented", msg)
    if m:
        return "attribute value not implemented", f"{m.group(1)} {m.group(2)}={m.group(3)}"
    if "must be a constant" in msg or "depends on the values" in msg:
        m = re.search(r"\((\w+)\)", msg)
        return "output shape from run-time values", m.group(1) if m else ops
    if "training_mode" in msg:
        return "training mode", ops
    m = re.search(r"\((\w+)\): (.*)", msg)
    return "other", f"{m.group(1)}: {m.group(2)}" if m else msg


def summary(table: str) -> str:
    """Markdown counts of a table: outcomes, then refusals by reason and detail."""
    rows = read_rows(table)
    t = {k: (out, msg) for k, (_, out, msg) in rows.items()}
    ops_of = {k: ops for k, (ops, _, _) in rows.items()}
    counts: dict[str, int] = {}
    by: dict[str, dict[str, int]] = {}
    for name, (out, msg) in t.items():
        counts[out] = counts.get(out, 0) + 1
        if out != "pass":
            r, d = reason_of(out, msg, ops_of.get(name, ""))
            by.setdefault(r, {})
            by[r][d] = by[r].get(d, 0) + 1
    lines = [f"| outcome | cases |", "|---|---|"]
    for k in ("pass", "refused", "non-tensor"):
        lines.append(f"| {k} | {counts.get(k, 0)} |")
    lines += ["| wrong | 0 |", "| crash | 0 |", f"| total | {len(t)} |", "",
              "| refused because | cases | detail (cases) |", "|---|---|---|"]
    for r, ds in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
        detail = ", ".join(f"{d} ({n})" for d, n in sorted(ds.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"| {r} | {sum(ds.values())} | {detail} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the fuse-advise executable")
    ap.add_argument("--table", required=True, help="expected outcomes (tsv)")
    ap.add_argument("--work", required=True, help="folder for the generated cases (emptied)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FA_SUITE_JOBS", "2")))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    ap.add_argument("--subset", help="file naming the cases to run (one per line)")
    ap.add_argument("--filter", help="run only cases whose name contains this (development)")
    ap.add_argument("--update", action="store_true", help="rewrite the table from this run")
    ap.add_argument("--counts", action="store_true", help="print counts by outcome and reason")
    ap.add_argument("--summary", action="store_true", help="print the table's counts as markdown and exit (no run)")
    a = ap.parse_args()
    if a.summary:
        sys.stdout.write(summary(a.table))
        return 0

    names = None
    if a.subset:
        with open(a.subset, encoding="utf-8") as f:
            names = {ln.split("#")[0].strip() for ln in f} - {""}
    t0 = time.monotonic()
    os.makedirs(a.work, exist_ok=True)
    cases = generate(a.work, names, a.filter)
    if names is not None:
        missing = names - {c["name"] for c in cases}
        if missing and not a.filter:
            print(f"FAIL subset names cases onnx {onnx.__version__} does not generate: {sorted(missing)[:10]}")
            return 1
    t_gen = time.monotonic() - t0
    if not cases:  # a mistyped --filter/--subset, or an onnx that generates nothing: no check ran
        print(f"FAIL no case of onnx {onnx.__version__} matches the --filter/--subset given")
        return 1

    results: dict[str, tuple[str, str]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = {pool.submit(run_case, a.cli, c, a.timeout): c for c in cases}
        for f in concurrent.futures.as_completed(futs):
            results[futs[f]["name"]] = f.result()
    t_run = time.monotonic() - t0 - t_gen
    by_name = {c["name"]: c for c in cases}

    expected = read_table(a.table) if os.path.exists(a.table) else {}
    tv = table_onnx_version(a.table) if os.path.exists(a.table) else None
    problems = []
    for name in sorted(results):
        out, why = results[name]
        if out in ("wrong", "crash"):
            problems.append(f"{out.upper()} {name}: {why}")
            continue
        if a.update:
            continue
        if name not in expected:
            problems.append(f"NEW {name}: {out} {why} (not in the table)")
            continue
        eo, ew = expected[name]
        if (eo, ew) != (out, why):
            if out == "pass":
                problems.append(f"NOW PASSES {name} (table: {eo} {ew}): run with --update")
            elif eo == "pass":
                problems.append(f"NEW REFUSAL {name}: {why}")
            else:
                problems.append(f"CHANGED {name}: {out} '{why}' (table: {eo} '{ew}')")
    if not a.update and names is None and not a.filter:
        for name in sorted(set(expected) - set(results)):
            problems.append(f"GONE {name}: in the table, not generated by onnx {onnx.__version__}")

    if a.update:
        rows = []
        for name in sorted(results):
            out, why = results[name]
            if out in ("wrong", "crash"):
                continue
            rows.append(f"{name}\t{by_name[name]['op']}\t{out}\t{why}\n")
        if names is not None or a.filter:  # partial run: keep the other rows
            for name, (eops, eo, ew) in sorted(read_rows(a.table).items() if os.path.exists(a.table) else []):
                if name not in results:
                    rows.append(f"{name}\t{eops}\t{eo}\t{ew}\n")
            rows.sort()
        with open(a.table, "w", encoding="utf-8") as f:
            f.write(HEADER.format(onnx=onnx.__version__))
            f.writelines(rows)

    counts: dict[str, int] = {}
    for out, _ in results.values():
        counts[out] = counts.get(out, 0) + 1
    print(f"onnx {onnx.__version__} node suite: {len(results)} cases; "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"; generate {t_gen:.1f} s, run {t_run:.1f} s with {a.jobs} jobs")
    if a.counts:
        reasons: dict[tuple[str, str], int] = {}
        for name, (out, why) in results.items():
            if out in ("refused", "non-tensor"):
                key = (out, by_name[name]["op"])
                reasons[key] = reasons.get(key, 0) + 1
        for (out, op), n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {out:10s} {op:40s} {n}")
    if tv and tv != onnx.__version__ and problems:
        print(f"note: the table was made with onnx {tv}, installed is {onnx.__version__}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
