#!/usr/bin/env python3
"""Run fuse-advise over the exported survey models and write the survey table (markdown).

    python3 docs/survey/survey.py FUSE_ADVISE OUT_DIR [--run] > table.md

For every OUT_DIR/NAME.onnx written by export_models.py: the op histogram (onnx), whether
`fuse-advise inspect` loads it (no flags: symbolic dims take their default), `fuse-advise exec`
on NAME/test_data_set_0 (batch 2 inputs: the shapes come from the files) against ONNX Runtime's
outputs (max |a-b| / max |b|), and with --run the exit status of `fuse-advise run NAME.onnx
--iters 3` (baseline, plan, apply, reports). Needs onnx and numpy.
"""
import collections
import glob
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper


def sh(cmd, timeout=1800):
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, err = p.returncode, (p.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        rc, err = "timeout", f"over {timeout} s"
    return rc, err, time.time() - t


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    fa, out_dir = os.path.abspath(sys.argv[1]), sys.argv[2]
    do_run = "--run" in sys.argv[3:]
    rows, worst = [], 0
    for path in sorted(glob.glob(os.path.join(out_dir, "*.onnx"))):
        name = os.path.basename(path)[:-5]
        model = onnx.load(path)
        hist = collections.Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                                   for n in model.graph.node)
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        rc_i, err_i, _ = sh([fa, "inspect", path])
        tdir = os.path.join(out_dir, name, "test_data_set_0")
        odir = os.path.join(out_dir, name, "fa_out")
        rc_e, err_e, t_e = sh([fa, "exec", path, "--inputs", tdir, "--outputs", odir])
        rel = None
        refs = sorted(glob.glob(os.path.join(tdir, "output_*.pb")))
        if rc_e == 0 and not refs:
            rc_e, err_e = "no reference", f"no output_*.pb in {tdir}"
        if rc_e == 0:
            rel = 0.0
            for ref_path in refs:
                ref = numpy_helper.to_array(onnx.load_tensor(ref_path)).astype(np.float64)
                if not np.abs(ref).max() > 0:
                    rel, rc_e, err_e = None, "degenerate", f"{ref_path} is all zeros: nothing to compare"
                    break
                got = numpy_helper.to_array(onnx.load_tensor(os.path.join(odir, os.path.basename(ref_path))))
                if got.shape != ref.shape:
                    rel = float("inf")
                    break
                rel = max(rel, float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-12)))
            if rel is not None:
                worst = max(worst, rel)
        rc_r, err_r, t_r = ("-", "", 0.0)
        if do_run:
            rc_r, err_r, t_r = sh([fa, "run", path, "--iters", "3", "--db", os.path.join(out_dir, "survey.db"),
                                   "--out", os.path.join(out_dir, name, "run_out")])
        rows.append((name, opset, len(model.graph.node), hist, rc_i, err_i, rc_e, err_e, rel, t_e, rc_r, err_r, t_r))
        print(f"{name}: inspect {rc_i} exec {rc_e} rel {rel} run {rc_r} ({t_r:.0f} s) {err_e if rc_e else ''}"
              f"{err_r if rc_r not in (0, '-') else ''}", file=sys.stderr, flush=True)
    print("| model | opset | nodes | loads | exec rel. error vs ORT | exec s | run exit | run s |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, opset, nn, hist, rc_i, err_i, rc_e, err_e, rel, t_e, rc_r, err_r, t_r) in rows:
        loads = "yes" if rc_i == 0 else f"no ({err_i})"
        ex = f"{rel:.1e}" if rel is not None else f"exit {rc_e}: {err_e}"
        print(f"| {name} | {opset} | {nn} | {loads} | {ex} | {t_e:.1f} | {rc_r} | {t_r:.0f} |")
    print("\nOp histogram per model (op: count):\n")
    for (name, _, _, hist, *_rest) in rows:
        print(f"- **{name}**: " + ", ".join(f"{k} {v}" for k, v in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))))
    ops = collections.Counter()
    for r in rows:
        ops.update(r[3].keys())
    print("\nOps over all models (number of models using each): " +
          ", ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))))
    bad = [r for r in rows if r[4] != 0 or r[6] != 0 or r[8] is None or r[8] > 1e-4 or (do_run and r[10] != 0)]
    print(f"\n{len(rows)} models, {len(bad)} failing; worst exec error {worst:.1e}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
