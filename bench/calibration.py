#!/usr/bin/env python3
"""bench/calibration.py — predicted against measured fusion savings, per cluster kind (issue 19).

usage: calibration.py [--bw GBS --dispatch NS] NAME=PLAN.json ...

Reads the plan.json that `fuse-advise run` writes (clusters with est_saving_ns, basis and, once
applied, measured_saving_ns) and prints, per model and over all, per cluster kind: clusters
measured, median predicted/measured, share within +-25% of the measured saving, count with the
wrong sign; then the same over the accepted clusters. With --bw and --dispatch it prints the same
for the analytic formula the advisor used before issue 19 (saved_bytes / bandwidth +
saved_launches x dispatch - recompute) on the same clusters, for comparison. Standard library only.
"""
import json
import statistics
import sys

MEASURED = ("accepted", "rejected-no-gain", "rejected-regression")


def load(args):
    rows = []  # (model, kind, status, predicted_ns, measured_ns, analytic_ns or None, basis)
    bw = disp = None
    plans = []
    i = 0
    while i < len(args):
        if args[i] == "--bw":
            bw = float(args[i + 1]); i += 2; continue
        if args[i] == "--dispatch":
            disp = float(args[i + 1]); i += 2; continue
        plans.append(args[i]); i += 1
    for arg in plans:
        name, path = arg.split("=", 1)
        try:
            with open(path) as f:
                plan = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{name}: no plan ({e})")
            continue
        for c in plan.get("clusters", []):
            m = c.get("measured_saving_ns")
            if m is None or c.get("status") not in MEASURED:
                continue
            an = None
            if bw and disp is not None:
                an = c["saved_bytes"] / bw + c["saved_launches"] * disp - (c.get("recompute_ns") or 0)
            rows.append((name, c["kind"], c["status"], float(c["est_saving_ns"]), float(m), an, c.get("basis") or ""))
    return rows


def stats(rs, col):
    n = len(rs)
    if not n:
        return None
    ratios = [r[col] / r[4] for r in rs if r[4] != 0]
    within = sum(1 for r in rs if r[4] != 0 and abs(r[col] - r[4]) <= 0.25 * abs(r[4]))
    wrong = sum(1 for r in rs if (r[col] > 0) != (r[4] > 0))
    med = statistics.median(ratios) if ratios else float("nan")
    return n, med, 100.0 * within / n, wrong, 100.0 * wrong / n


def table(title, rs, col):
    print(title)
    print(f"  {'kind':<18} {'n':>4} {'median pred/meas':>17} {'within 25%':>11} {'wrong sign':>11}")
    for kind in sorted({r[1] for r in rs}) + ["all"]:
        sel = rs if kind == "all" else [r for r in rs if r[1] == kind]
        s = stats(sel, col)
        if s:
            print(f"  {kind:<18} {s[0]:>4} {s[1]:>17.2f} {s[2]:>10.0f}% {s[3]:>5} ({s[4]:.0f}%)")


def main():
    rows = load(sys.argv[1:])
    if not rows:
        print("no measured clusters")
        return
    models = sorted({r[0] for r in rows})
    cols = [(3, "profile-based prediction (issue 19)")]
    if rows[0][5] is not None:
        cols.append((5, "analytic formula (before issue 19), same clusters"))
    for col, what in cols:
        print(f"==== {what}")
        for model in models + ["ALL MODELS"]:
            rs = rows if model == "ALL MODELS" else [r for r in rows if r[0] == model]
            table(f"{model}: measured clusters", rs, col)
            acc = [r for r in rs if r[2] == "accepted"]
            if acc:
                table(f"{model}: accepted clusters", acc, col)
    measured_basis = sum(1 for r in rows if r[6].startswith("measured"))
    print(f"predictions resting on the measured profile: {measured_basis} of {len(rows)}")


if __name__ == "__main__":
    main()
