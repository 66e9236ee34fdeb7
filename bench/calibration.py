#!/usr/bin/env python3
"""bench/calibration.py — predicted against measured fusion savings, per cluster kind (issue 19).

usage: calibration.py [--db RUN.db] [--bw GBS --dispatch NS] [--families] [FAMILY/]NAME=PLAN.json ...
       calibration.py --repeat NAME=PASS1_PLAN.json,PASS2_PLAN.json ...   (the noise floor)

Reads the plan.json that `fuse-advise run` writes (clusters with est_saving_ns, basis and, once
applied, measured_saving_ns) and prints, per model and over all, per cluster kind: clusters
measured, how many of those measurements resolve a saving and how many do not, and over the
resolved ones the median predicted/measured, the share within +-25% of the measured saving and
the count with the wrong sign; then the same over the accepted clusters.

Resolved (with --db, the SQLite run database the plans were measured into; its benchmarks table
holds each cluster's interleaved unfused/fused samples, paired by round): the paired differences
d = unfused - fused have a distribution-free confidence interval of their median that excludes 0
(order statistics d(k), d(n+1-k), k the largest with P(Binomial(n, 1/2) < k) <= 5%: coverage
>= 90%; Conover, Practical Nonparametric Statistics, sec. 3.2), or an IQR smaller than the
predicted magnitude. The same rule as core/stats.c fa_paired_saving_resolved (the HTML report's
per-kind table). A measurement that does not resolve its saving is within its own noise: it can
neither confirm nor falsify a prediction, so it is counted apart, never as a hit or a miss;
resolved misses stay misses. Without --db every measured cluster counts (no resolution known).

Where the prediction misses (with --db, per kind over the resolved clusters): the median of
measured / predicted for the unfused side (the members' time the prediction takes from the
baseline profile, against the cluster's unfused sub-graph measured in isolation) and for the fused
side (the fused kernel's predicted time against its measured one), both read from the basis text.

Per family (issue 36; a plan argument named FAMILY/NAME, or --families): per family and cluster
kind, accepted clusters within +-25%, wrong sign among the measured ones, the median |error|,
the measurement's own repeatability and the term of the prediction that misses most (miss_term:
the stored terms pred_members_ns, pred_dispatch_ns, pred_fused_ns, pred_ratio against the paired
benchmark's meas_unfused_ns and meas_fused_ns). Then, with --db, the same counts adjusted beside
the raw ones (families, about_zero, per_benchmark): a cluster whose predicted and measured savings
both lie within the IQR of its paired per-round differences is "about 0, within repeatability"
(agreement: neither a miss nor a wrong sign); clusters sharing one benchmark (one signature in one
plan) count once; the median round IQR / |measured| beside them.

The saving in the model (issue 36; inmodel_table): per family and kind, over the accepted clusters
with an in-model saving (plan.json inmodel_saving_ns: per end-to-end round, the nodes a fused node
replaces in the baseline's run less the fused node in the fused model's run, applier/inmodel.c), the prediction
within +-25% of the isolated measurement and, on the same clusters, of the in-model saving, the
wrong sign against each, the median in-model / isolated ratio and how many in-model savings lie
within their own spread (inmodel_spread_ns: the IQR of the per-round differences). Per plan
(plan_totals) the in-model savings summed beside the end-to-end saving.

The members' side split (issue 36; isolation_split): per family and kind, over the accepted
clusters benchmarked on their own whose basis quotes the probe, the medians of the probe's
unfused sub-graph / the profile's members and of the applier's unfused and fused medians / the
probe's (the same isolated sub-graphs timed twice). Per plan (plan_totals), the accepted
clusters' isolated measured savings summed beside the end-to-end saving.

With --bw and --dispatch it prints the same for the analytic formula the advisor used before
issue 19 (saved_bytes / bandwidth + saved_launches x dispatch - recompute) on the same clusters,
for comparison. Standard library only.
"""
import json
import math
import re
import sqlite3
import statistics
import sys

MEASURED = ("accepted", "rejected-no-gain", "rejected-regression")


def quantile(s, q):
    """Type-7 quantile of sorted s (core/stats.c's convention)."""
    h = (len(s) - 1) * q
    i = math.floor(h)
    return s[i] if i + 1 >= len(s) else s[i] + (h - i) * (s[i + 1] - s[i])


def paired(u, f):
    """(median, IQR, ci_lo, ci_hi) of the paired differences u - f; ci None below 5 pairs."""
    d = sorted(a - b for a, b in zip(u, f))
    n = len(d)
    if not n:
        return None
    tail, term, k = 0.0, 0.5 ** n, 0
    for j in range(n):
        if tail + term > 0.05:
            break
        tail += term
        k = j + 1
        term = term * (n - j) / (j + 1)
    ci = (d[k - 1], d[n - k]) if 1 <= k <= n + 1 - k else None
    return quantile(d, 0.5), quantile(d, 0.75) - quantile(d, 0.25), ci, statistics.median(u), statistics.median(f)


def resolved(p, predicted):
    if p is None:
        return None
    _, iqr, ci, _, _ = p
    if ci and (ci[0] > 0 or ci[1] < 0):
        return True
    return iqr < abs(predicted)


BASIS = re.compile(r"medians (-?[\d.]+) ns \+ (\d+) gap\(s\) x (-?[\d.]+) ns; fused kernel (-?[\d.]+) ns")
ANCHOR = re.compile(r"anchor's measured (-?[\d.]+) ns")
HERE = re.compile(r"x the members' (-?[\d.]+) ns here")  # a lookup's basis: all members' time, anchor included
# the probe's basis (issue-19e): the fused kernel is the probe's fused/unfused ratio x the members'
# profile time; the probe's own unfused and fused medians are quoted beside it
PROBE = re.compile(r"fused = that ratio (-?[\d.]+) x the members' (-?[\d.]+) ns in the profile .*?the probe's own "
                   r"difference (-?[\d.]+) - (-?[\d.]+) ns\)")


def sides(c):
    """(predicted unfused ns, predicted fused ns) from a measured basis, else None."""
    m = BASIS.search(c.get("basis") or "")
    if not m:
        return None
    gone, gaps, gap, fused = float(m[1]), int(m[2]), float(m[3]), float(m[4])
    probe = PROBE.search(c["basis"])
    if probe:  # all members' profile time, anchor included (as a lookup's)
        return float(probe[2]) + gaps * gap, fused
    here = HERE.search(c["basis"])
    if here:
        return float(here[1]) + gaps * gap, fused
    anchor = 0.0
    if c["kind"] == "bn-fold":
        anchor = fused  # the anchor's kernel unchanged
    else:
        a = ANCHOR.search(c["basis"])
        if a:
            anchor = float(a[1])
    return gone + anchor + gaps * gap, fused


def num(x):
    return float(x) if isinstance(x, (int, float)) and x == x else None


def terms(c):
    """The prediction's stored terms and their measured counterparts (plan.json, schema v9 on):
    {members, dispatch, fused, ratio, recompute, meas_unfused, meas_fused}, None where absent."""
    return {"members": num(c.get("pred_members_ns")), "dispatch": num(c.get("pred_dispatch_ns")),
            "fused": num(c.get("pred_fused_ns")), "ratio": num(c.get("pred_ratio")),
            "recompute": num(c.get("recompute_ns")) or 0.0,
            "meas_unfused": num(c.get("meas_unfused_ns")), "meas_fused": num(c.get("meas_fused_ns")),
            "inmodel": num(c.get("inmodel_saving_ns")), "inmodel_spread": num(c.get("inmodel_spread_ns"))}


def miss_term(t, pred, meas):
    """Which term of the prediction explains most of the miss meas - pred (docs/status.md, "The
    terms of a prediction"): None without the stored terms. With M the members' profile time, D
    the dispatch term, F the predicted fused time (r: the probe's or lookup's fused/unfused ratio,
    F = r x M), U and Fm the paired benchmark's unfused and fused medians:
      fused side:   "fused" F - Fm (no ratio), or "ratio" (r - Fm/U) x U (a ratio: its error at the
                    measured unfused time; the rest of F's error follows the members);
      unfused side: the rest of the miss, (meas - pred) - fused side; "dispatch" when the unfused
                    side was overpredicted and the dispatch term D is at least half of that
                    error, else "members" (the members' time moved between profile and benchmark).
    The larger side names the term."""
    M, D, F, r, U, Fm = t["members"], t["dispatch"], t["fused"], t["ratio"], t["meas_unfused"], t["meas_fused"]
    if None in (M, F, U, Fm) or U <= 0:
        return None
    D = D or 0.0
    if r is not None:
        fused_err, fused_name = (r - Fm / U) * U, "ratio"
    else:
        fused_err, fused_name = F - Fm, "fused"
    unfused_err = (meas - pred) - fused_err
    if abs(fused_err) >= abs(unfused_err):
        return fused_name
    return "dispatch" if unfused_err < 0 and D >= 0.5 * abs(unfused_err) else "members"


def bench_samples(db, run_id, plan_id):
    """{cluster_id: (unfused samples, fused samples)} paired by round (iter)."""
    out = {}
    if not db:
        return out
    q = ("SELECT cluster_id, subject, iter, latency_ns FROM benchmarks WHERE run_id=? AND plan_id=? AND "
         "subject IN ('cluster-unfused','cluster-fused') ORDER BY cluster_id, iter")
    series = {}
    for cid, subj, it, ns in db.execute(q, (run_id, plan_id)):
        series.setdefault(cid, {}).setdefault(subj, {})[it] = float(ns)
    for cid, s in series.items():
        u, f = s.get("cluster-unfused", {}), s.get("cluster-fused", {})
        its = sorted(set(u) & set(f))
        out[cid] = ([u[i] for i in its], [f[i] for i in its])
    return out


WITHHELD = ("below-noise", "measured-loss", "not-beneficial")


def withheld(plans):
    """{model: {refusal word: count}} of the clusters the cost model withheld (issue 19's noise
    floor: below-noise, measured-loss; and not-beneficial), read from each plan's reasons."""
    out = {}
    for arg in plans:
        name, path = arg.split("=", 1)
        try:
            with open(path) as f:
                plan = json.load(f)
        except (OSError, ValueError):
            continue
        for c in plan.get("clusters", []):
            word = (c.get("reason") or "").split(":", 1)[0]
            if c.get("status") == "refused" and word in WITHHELD:
                out.setdefault(name, {}).setdefault(word, 0)
                out[name][word] += 1
    return out


def load(args):
    # rows: (model, kind, status, predicted_ns, measured_ns, analytic_ns or None, basis,
    #        resolved True/False/None, (pred unfused, pred fused) or None, (meas unfused, meas fused) or None,
    #        benchmark shared with an earlier cluster of the same signature)
    rows = []
    bw = disp = None
    db = None
    plans = []
    i = 0
    while i < len(args):
        if args[i] == "--bw":
            bw = float(args[i + 1]); i += 2; continue
        if args[i] == "--dispatch":
            disp = float(args[i + 1]); i += 2; continue
        if args[i] == "--families":
            i += 1; continue
        if args[i] == "--db":
            db = sqlite3.connect(args[i + 1]); i += 2; continue
        plans.append(args[i]); i += 1
    for arg in plans:
        name, path = arg.split("=", 1)
        try:
            with open(path) as f:
                plan = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{name}: no plan ({e})")
            continue
        samples = bench_samples(db, plan.get("run_id"), plan.get("plan_id"))
        for c in plan.get("clusters", []):
            m = c.get("measured_saving_ns")
            if m is None or c.get("status") not in MEASURED:
                continue
            an = None
            if bw and disp is not None:
                an = c["saved_bytes"] / bw + c["saved_launches"] * disp - (c.get("recompute_ns") or 0)
            pred = float(c["est_saving_ns"])
            p = paired(*samples[c["id"]]) if c["id"] in samples else None
            res = resolved(p, pred) if db else None
            meas_sides = (p[3], p[4]) if p else None
            rows.append((name, c["kind"], c["status"], pred, float(m), an, c.get("basis") or "", res, sides(c),
                         meas_sides, "benchmark shared with cluster" in (c.get("reason") or ""),
                         samples.get(c["id"]), {"terms": terms(c), "ci": p[2] if p else None,
                                                "iqr": p[1] if p else None,
                                                "bench": (name, c.get("signature") or f"cluster {c['id']}")}))
    return rows


def stats(rs, col):
    """Over rs: n, resolved, unresolved, then over the resolved (all where unknown): median
    predicted/measured, % within 25%, wrong-sign count and %, and the unfused/fused side ratios."""
    n = len(rs)
    if not n:
        return None
    res = [r for r in rs if r[7] is not False]
    nres = len(res)
    ratios = [r[col] / r[4] for r in res if r[4] != 0]
    within = sum(1 for r in res if r[4] != 0 and abs(r[col] - r[4]) <= 0.25 * abs(r[4]))
    wrong = sum(1 for r in res if (r[col] > 0) != (r[4] > 0))
    med = statistics.median(ratios) if ratios else float("nan")
    su = [r[9][0] / r[8][0] for r in res if r[8] and r[9] and r[8][0] > 0]
    sf = [r[9][1] / r[8][1] for r in res if r[8] and r[9] and r[8][1] > 0]
    side_u = statistics.median(su) if su else float("nan")
    side_f = statistics.median(sf) if sf else float("nan")
    pct = (lambda k: 100.0 * k / nres) if nres else (lambda k: float("nan"))
    return n, nres, n - nres, med, pct(within), wrong, pct(wrong), side_u, side_f


def table(title, rs, col):
    print(title)
    print(f"  {'kind':<18} {'n':>4} {'resolved':>8} {'unresolved':>10} {'median pred/meas':>17} {'within 25%':>11} "
          f"{'wrong sign':>11} {'unfused meas/pred':>18} {'fused meas/pred':>16}")
    for kind in sorted({r[1] for r in rs}) + ["all"]:
        sel = rs if kind == "all" else [r for r in rs if r[1] == kind]
        s = stats(sel, col)
        if s:
            print(f"  {kind:<18} {s[0]:>4} {s[1]:>8} {s[2]:>10} {s[3]:>17.2f} {s[4]:>10.0f}% {s[5]:>5} ({s[6]:.0f}%) "
                  f"{s[7]:>18.2f} {s[8]:>16.2f}")


def probe_alternatives(rows):
    """Over the accepted, resolved clusters the probe predicted: the share within +-25% of the
    measured saving for the prediction (the members' profile time x (1 - the probe's fused/unfused
    ratio), gaps included) and, on the same clusters, for two alternatives (issue-19e): the probe's
    own difference (its unfused sub-graph - its fused kernel, which ignores the profile) and the
    members' profile time - the probe's fused time."""
    sel = []
    for r in rows:
        p = PROBE.search(r[6])
        m = BASIS.search(r[6])
        if p and m and r[2] == "accepted" and r[7] is not False and r[4] != 0:
            members, u, f = float(p[2]), float(p[3]), float(p[4])
            gaps = int(m[2]) * float(m[3])
            sel.append((r[4], r[3], u - f, members + gaps - f))
    if not sel:
        return
    pct = lambda k: 100.0 * sum(1 for x in sel if abs(x[k] - x[0]) <= 0.25 * abs(x[0])) / len(sel)
    print(f"probed library clusters, accepted and resolved: {len(sel)}; within +-25%: the prediction (profile members x "
          f"probe ratio) {pct(1):.0f}%; on the same clusters, the probe's own difference {pct(2):.0f}%, profile members - "
          f"probe fused {pct(3):.0f}%")


def self_agreement(rows):
    """The measurement against itself (a ceiling for any predictor made at another moment): over
    the accepted, resolved clusters measured on their own (not shared) with at least 10 rounds,
    the share whose saving (median paired difference) over the first half of the rounds is within
    +-25% of the second half's (the halves minutes' or seconds' apart: the machine's drift), the
    same for rounds split in alternate pairs, {0,1,4,5,..} against {2,3,6,7,..} (interleaved, each
    half with both run orders: sampling noise alone), and for the rounds that ran the unfused
    sub-graph first (even rounds: applier/judge.c fa_apply_bench_pair alternates the order by the
    round's index) against those that ran the fused one first (the order effect, which the judge's
    paired median balances)."""
    sel = [r[11] for r in rows if r[2] == "accepted" and r[7] is not False and not r[10] and r[11] and len(r[11][0]) >= 10]
    if not sel:
        return
    def saving(u, f, idx):
        return statistics.median([u[i] - f[i] for i in idx])
    def agree(u, f, x, y):
        a, b = saving(u, f, x), saving(u, f, y)
        return b != 0 and abs(a - b) <= 0.25 * abs(b)
    t = e = o = 0
    for u, f in sel:
        n, h = len(u), len(u) // 2
        t += agree(u, f, range(h), range(h, n))
        e += agree(u, f, [i for i in range(n) if i % 4 < 2], [i for i in range(n) if i % 4 >= 2])
        o += agree(u, f, range(0, n, 2), range(1, n, 2))
    pc = lambda k: 100.0 * k / len(sel)
    print(f"the measurement against itself ({len(sel)} accepted clusters measured on their own, >= 10 rounds): "
          f"first half of the rounds within +-25% of the second half {pc(t):.0f}% (drift over the measurement); "
          f"alternate pairs of rounds within +-25% of each other {pc(e):.0f}% (sampling noise); unfused-first rounds "
          f"within +-25% of fused-first ones {pc(o):.0f}% (the run order's effect)")


def clusters_measured_total(path):
    """The accepted clusters' measured savings summed, ns, each removed kernel once as the plan's
    predicted total counts them (plan/plan.c fa_plan_accepted_saving: a BN fold whose accepted
    epilogue depends on it is in that epilogue's measurement), from a plan.json; None without one."""
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    acc = [c for c in plan.get("clusters", []) if c.get("status") == "accepted"]
    absorbed = {c.get("depends_on") for c in acc if c.get("depends_on") is not None}
    return sum(num(c.get("measured_saving_ns")) or 0.0 for c in acc if c["id"] not in absorbed)


def inmodel_total(path):
    """The accepted clusters' in-model savings summed, ns (an absorbed BN fold has none: its
    kernels are in its epilogue's), and how many clusters had one; (None, 0) without any."""
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None, 0
    xs = [num(c.get("inmodel_saving_ns")) for c in plan.get("clusters", []) if c.get("status") == "accepted"]
    xs = [x for x in xs if x is not None]
    return (sum(xs), len(xs)) if xs else (None, 0)


def plan_totals(plans):
    """Per model, the plan's predicted saving (summary.json predicted_saving_ns: accepted clusters,
    each removed kernel once) against the end-to-end measured saving (baseline - fused medians),
    read from the summary.json beside each plan.json; and the accepted clusters' own measured
    savings summed the same way (each cluster's sub-graph benchmarked in isolation) against that
    end-to-end saving: where the sum is far above it, the isolated measurements overstate what the
    whole model gains, and a miss of the prediction against them is the measurement's (issue 36)."""
    ratios, by_family = [], {}
    for arg in plans:
        name, path = arg.split("=", 1)
        try:
            with open(path.rsplit("/", 1)[0] + "/summary.json") as f:
                s = json.load(f)
        except (OSError, ValueError):
            continue
        pr, me = s.get("predicted_saving_ns"), s.get("measured_saving_ns")
        if isinstance(pr, (int, float)) and isinstance(me, (int, float)) and me > 0 and pr > 0:
            ratios.append(pr / me)
            cm = clusters_measured_total(path)
            by_family.setdefault(family_of(name), []).append((pr / me, cm / me if cm else None))
            iso = f"; the clusters' isolated measurements summed {cm / 1e6:.2f} ms (ratio {cm / me:.2f})" if cm else ""
            im, nim = inmodel_total(path)
            inm = (f"; their savings in the model summed {im / 1e6:.2f} ms over {nim} cluster(s) (ratio {im / me:.2f})"
                   if im is not None else "")
            print(f"plan {name}: predicted {pr / 1e6:.2f} ms, measured end to end {me / 1e6:.2f} ms (ratio {pr / me:.2f})"
                  f"{iso}{inm}")
    if ratios:
        w = sum(1 for x in ratios if abs(x - 1) <= 0.25)
        print(f"plans: predicted total within +-25% of the end-to-end saving for {w} of {len(ratios)}; median ratio "
              f"{statistics.median(ratios):.2f}")
    if by_family:
        # the two yardsticks side by side, per family: the whole model's end-to-end saving judges
        # both the prediction and the clusters' isolated measurements summed (issue 36)
        print("per family, against the end-to-end saving: plans whose predicted total / whose isolated "
              "measurements summed are within +-25%")
        for fam, v in sorted(by_family.items()):
            iso = [b for _, b in v if b is not None]
            wp = sum(1 for a, _ in v if abs(a - 1) <= 0.25)
            wi = sum(1 for b in iso if abs(b - 1) <= 0.25)
            print(f"  {fam:<14} plans {len(v):>3}  predicted {wp:>3} (median ratio {statistics.median(a for a, _ in v):.2f})"
                  f"  isolated {wi:>3} of {len(iso)}" + (f" (median ratio {statistics.median(iso):.2f})" if iso else ""))


def isolation_split(rows):
    """Where the members' side misses, which of two moments moved (issue 36). Over the accepted
    clusters benchmarked on their own whose basis quotes the probe (its unfused sub-graph and fused
    kernel timed in isolation at the advise stage, interleaved), per family and kind, medians of:
    probe unfused / profile members (the same ops isolated against inside the traced model: cache
    state, thread wake-ups, the profile's moment), applier unfused / probe unfused and applier
    fused / probe fused (the same isolated sub-graphs measured twice, by the probe and by the
    applier: about 1 when the applier's measurement is what the probe saw)."""
    sel = {}
    for r in rows:
        p = PROBE.search(r[6])
        if not p or r[2] != "accepted" or r[10] or not r[9] or float(p[2]) <= 0 or float(p[3]) <= 0 or float(p[4]) <= 0:
            continue
        members, up, fp = float(p[2]), float(p[3]), float(p[4])
        key = (family_of(r[0]), r[1])
        sel.setdefault(key, []).append((up / members, r[9][0] / up, r[9][1] / fp))
    if not sel:
        return
    print("the members' side, split (accepted clusters benchmarked on their own, probed):")
    print(f"  {'family':<14} {'kind':<18} {'n':>4} {'probe unfused/profile':>22} {'applier/probe unfused':>22} "
          f"{'applier/probe fused':>20}")
    for (fam, kind), v in sorted(sel.items()):
        med = lambda k: statistics.median(x[k] for x in v)
        print(f"  {fam:<14} {kind:<18} {len(v):>4} {med(0):>22.2f} {med(1):>22.2f} {med(2):>20.2f}")


SIZE_CLASSES = ((10e3, "under 10 us"), (50e3, "10-50 us"), (float("inf"), "50 us and over"))


def size_split(rows):
    """Where the misses are by size (issue 36): over the accepted, resolved clusters with the
    stored terms, per family and by the members' time in the profile (pred_members_ns: under 10 us,
    10-50 us, 50 us and over), the share within +-25% of the measured saving, the median of the
    isolated unfused sub-graph over the profile's members (meas_unfused_ns / pred_members_ns: the
    members' term) and of the measured fused/unfused ratio over the predicted one (the ratio's
    term). On 2026-12-07 the mobile CNNs' misses were their clusters under 10 us: 23-26% within,
    their isolated members at 0.40 of the profile, the ratio at 1.00 (bench/README.md "Cold L2")."""
    sel = {}
    for r in rows:
        t = r[12]["terms"]
        if r[2] != "accepted" or r[7] is False or not t["members"] or not t["meas_unfused"]:
            continue
        label = next(lab for lim, lab in SIZE_CLASSES if t["members"] < lim)
        v = sel.setdefault((family_of(r[0]), label), [0, 0, [], []])
        v[0] += 1
        v[1] += abs(r[3] - r[4]) <= 0.25 * abs(r[4])
        v[2].append(t["meas_unfused"] / t["members"])
        if t["ratio"] and t["meas_fused"]:
            v[3].append(t["meas_fused"] / t["meas_unfused"] / t["ratio"])
    if not sel:
        return
    print("by the members' time in the profile (accepted, resolved clusters with the stored terms):")
    print(f"  {'family':<14} {'members':<15} {'n':>4} {'within 25%':>11} {'isolated/profile members':>25} "
          f"{'measured/predicted ratio':>25}")
    order = {lab: i for i, (_, lab) in enumerate(SIZE_CLASSES)}
    for (fam, lab), v in sorted(sel.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        rr = f"{statistics.median(v[3]):.2f}" if v[3] else "-"
        print(f"  {fam:<14} {lab:<15} {v[0]:>4} {100.0 * v[1] / v[0]:>10.0f}% {statistics.median(v[2]):>25.2f} {rr:>25}")


def inmodel_table(rows):
    """The prediction against the saving in the model (issue 36), beside its agreement with the
    isolated measurement on the same clusters: per family and kind, over the accepted clusters
    with an in-model saving (plan.json inmodel_saving_ns; NaN/null ones -- an absorbed BN fold, a
    plan stored before schema v12 -- are left out): n; the prediction within +-25% of the isolated
    measured saving and of the in-model saving; the wrong sign against each; the median in-model /
    isolated ratio (over clusters with a positive isolated saving); how many in-model savings are
    within their own spread of 0 (|saving| <= inmodel_spread_ns: the traces' iterations cannot
    tell them from nothing). Every cluster counts here, resolved or not: the in-model figure has
    no paired interval, its spread is shown instead."""
    sel = [r for r in rows if r[2] == "accepted" and r[12]["terms"]["inmodel"] is not None]
    if not sel:
        print("the saving in the model: no accepted cluster has one (plans stored before schema v12, or no fused trace)")
        return
    print("==== the saving in the model against the isolated measurement (issue 36; accepted clusters with an "
          "in-model saving)")
    print(f"  {'family':<14} {'kind':<18} {'n':>4} {'pred within 25%: isolated':>26} {'in-model':>12} "
          f"{'wrong sign: isolated':>21} {'in-model':>10} {'in-model/isolated':>18} {'within spread':>14}")
    fams = sorted({family_of(r[0]) for r in sel})
    for fam in fams + ["ALL"]:
        fr = sel if fam == "ALL" else [r for r in sel if family_of(r[0]) == fam]
        for kind in sorted({r[1] for r in fr}) + ["all"]:
            k = [r for r in fr if kind == "all" or r[1] == kind]
            if not k:
                continue
            inm = [(r, r[12]["terms"]["inmodel"], r[12]["terms"]["inmodel_spread"]) for r in k]
            w_iso = sum(1 for r, x, _ in inm if r[4] != 0 and abs(r[3] - r[4]) <= 0.25 * abs(r[4]))
            w_in = sum(1 for r, x, _ in inm if x != 0 and abs(r[3] - x) <= 0.25 * abs(x))
            s_iso = sum(1 for r, x, _ in inm if (r[3] > 0) != (r[4] > 0))
            s_in = sum(1 for r, x, _ in inm if (r[3] > 0) != (x > 0))
            ratios = [x / r[4] for r, x, _ in inm if r[4] > 0]
            noise = sum(1 for r, x, sp in inm if sp is not None and abs(x) <= sp)
            n = len(inm)
            pc = lambda a: f"{a} ({100.0 * a / n:.0f}%)"
            med = f"{statistics.median(ratios):.2f}" if ratios else "-"
            print(f"  {fam:<14} {kind:<18} {n:>4} {pc(w_iso):>26} {pc(w_in):>12} {pc(s_iso):>21} {pc(s_in):>10} "
                  f"{med:>18} {noise:>14}")
    print("  (pred within 25% of isolated / of in-model: the prediction est_saving_ns against measured_saving_ns and "
          "against inmodel_saving_ns; wrong sign: against each, isolated then in-model; in-model/isolated: the median "
          "ratio of the two measurements; within spread: in-model savings no larger than their own spread)")


def family_of(name):
    """A plan argument named FAMILY/MODEL (bench_calibration.sh): its family; else the model."""
    return name.split("/", 1)[0] if "/" in name else name


def about_zero(r):
    """A cluster whose prediction and measured saving both lie within its measurement's own
    repeatability (issue 36): |predicted| and |measured| no larger than the IQR of its paired
    per-round differences unfused - fused (how far one round's saving moves between rounds; with
    --db only). Such a cluster is "about 0, within repeatability": agreement, neither a miss nor a
    wrong sign, whatever the signs of two figures that small."""
    iqr = r[12].get("iqr")
    return iqr is not None and abs(r[3]) <= iqr and abs(r[4]) <= iqr


def per_benchmark(rs):
    """One row per benchmark (issue 36): the clusters of one plan with the same signature share one
    measurement (the applier benchmarks the first and copies its figures to the others: "benchmark
    shared with cluster N"), so they count once, as the cluster the benchmark was taken on (the
    first not shared; else the first). Plans without signatures: every cluster its own."""
    first = {}
    for r in rs:
        key = r[12]["bench"]
        if key not in first or (first[key][10] and not r[10]):
            first[key] = r
    return list(first.values())


def agreement(rs):
    """Over rows rs: (accepted resolved, of them within +-25%, measured resolved, of them with the
    wrong sign), raw; then (about 0 among the accepted resolved, within +-25% or about 0, wrong sign
    and not about 0) -- the adjusted counts (about_zero)."""
    res = [r for r in rs if r[7] is not False and r[4] != 0]
    acc = [r for r in res if r[2] == "accepted"]
    within = [r for r in acc if abs(r[3] - r[4]) <= 0.25 * abs(r[4])]
    wrong = [r for r in res if (r[3] > 0) != (r[4] > 0)]
    zero = [r for r in acc if about_zero(r)]
    within_adj = sum(1 for r in acc if r in within or about_zero(r))
    wrong_adj = sum(1 for r in wrong if not about_zero(r))
    return len(acc), len(within), len(res), len(wrong), len(zero), within_adj, wrong_adj


def families(rows):
    """Per family and cluster kind (issue 36): accepted clusters resolved and within +-25% of their
    measured saving, wrong sign among the measured resolved ones, the median |measured - predicted|
    / |measured| over the accepted resolved ones, the measurement's own repeatability (the median
    half-width of the paired differences' sign-test interval / |measured|, the same clusters), and
    the term that explains most misses (miss_term, over the accepted resolved clusters outside
    +-25%: the commonest, with its count).
    Then the same counts adjusted, beside the raw ones (never instead): "about 0" clusters
    (about_zero) count as agreement, neither a miss nor a wrong sign; and per benchmark
    (per_benchmark: clusters sharing one measurement counted once), with the median IQR of the
    paired differences / |measured| (a round's repeatability) beside them."""
    fams = sorted({family_of(r[0]) for r in rows})
    print("==== per family and cluster kind (issue 36)")
    print(f"  {'family':<14} {'kind':<18} {'accepted within 25%':>20} {'wrong sign (measured)':>22} "
          f"{'median |err|':>13} {'repeatability':>14}  term missing most")
    for fam in fams + ["ALL"]:
        fr = rows if fam == "ALL" else [r for r in rows if family_of(r[0]) == fam]
        for kind in sorted({r[1] for r in fr}) + ["all"]:
            sel = [r for r in fr if kind == "all" or r[1] == kind]
            res = [r for r in sel if r[7] is not False and r[4] != 0]
            acc = [r for r in res if r[2] == "accepted"]
            within = [r for r in acc if abs(r[3] - r[4]) <= 0.25 * abs(r[4])]
            wrong = sum(1 for r in res if (r[3] > 0) != (r[4] > 0))
            errs = [abs(r[4] - r[3]) / abs(r[4]) for r in acc]
            reps = [(r[12]["ci"][1] - r[12]["ci"][0]) / 2 / abs(r[4]) for r in acc if r[12]["ci"]]
            terms_ = {}
            for r in acc:
                if r in within:
                    continue
                t = miss_term(r[12]["terms"], r[3], r[4])
                if t:
                    terms_[t] = terms_.get(t, 0) + 1
            top = max(terms_.items(), key=lambda kv: kv[1]) if terms_ else None
            misses = len(acc) - len(within)
            pc = (lambda a, b: f"{a} / {b} ({100.0 * a / b:.0f}%)" if b else "-")
            med = f"{100 * statistics.median(errs):.0f}%" if errs else "-"
            rep = f"{100 * statistics.median(reps):.0f}%" if reps else "-"
            term = f"{top[0]} ({top[1]} of {misses} misses)" if top else ("-" if misses == 0 else "no terms stored")
            print(f"  {fam:<14} {kind:<18} {pc(len(within), len(acc)):>20} {pc(wrong, len(res)):>22} {med:>13} "
                  f"{rep:>14}  {term}")
    if all(r[12].get("iqr") is None for r in rows):
        return  # no --db: no repeatability known, nothing to adjust
    print("==== the same, adjusted: about 0 within repeatability, and each shared benchmark once (issue 36)")
    print(f"  {'family':<14} {'kind':<18} {'about 0':>8} {'within 25%: raw':>16} {'adjusted':>17} "
          f"{'wrong sign: raw':>16} {'adjusted':>17} {'benchmarks':>11} {'within 25%':>17} {'wrong sign':>17} "
          f"{'round IQR':>10}")
    for fam in fams + ["ALL"]:
        fr = rows if fam == "ALL" else [r for r in rows if family_of(r[0]) == fam]
        for kind in sorted({r[1] for r in fr}) + ["all"]:
            sel = [r for r in fr if kind == "all" or r[1] == kind]
            na, w, nr, s, z, wa, sa = agreement(sel)
            one = per_benchmark(sel)
            ba, _, br, _, _, bwa, bsa = agreement(one)
            iqrs = [r[12]["iqr"] / abs(r[4]) for r in one
                    if r[2] == "accepted" and r[7] is not False and r[4] != 0 and r[12].get("iqr") is not None]
            pc = (lambda a, b: f"{a}/{b} ({100.0 * a / b:.0f}%)" if b else "-")
            rep = f"{100 * statistics.median(iqrs):.0f}%" if iqrs else "-"
            print(f"  {fam:<14} {kind:<18} {z:>8} {pc(w, na):>16} {pc(wa, na):>17} {pc(s, nr):>16} {pc(sa, nr):>17} "
                  f"{len(one):>11} {pc(bwa, ba):>17} {pc(bsa, br):>17} {rep:>10}")
    print("  (about 0: accepted clusters whose |predicted| and |measured| saving are both within the IQR of their "
          "paired per-round differences, counted as agreement in the adjusted columns, never as a miss or a wrong "
          "sign; raw: as above; benchmarks: clusters sharing one measurement (same signature in one plan) counted "
          "once, with the adjusted rule; round IQR: the median IQR of the paired differences / |measured| over "
          "those benchmarks' accepted clusters)")


def repeat(args):
    """The noise floor: [FAMILY/]NAME=PLAN1,PLAN2 ... (the same model's plans of two passes): over
    the clusters (same members) accepted in both, the share whose measured saving in one is within
    +-25% of the other's, and the median of their ratio; over all and per family (issue 36: a
    family's target stated beside what its measurements allow). Beside it, on the same clusters,
    the share whose prediction (est_saving_ns) is within +-25% of the measured saving, in each
    pass. No predictor can be checked against these measurements more closely than they agree
    with themselves."""
    fams = {}
    for arg in args:
        name, paths = arg.split("=", 1)
        a, b = paths.split(",", 1)
        try:
            with open(a) as f:
                pa = json.load(f)
            with open(b) as f:
                pb = json.load(f)
        except (OSError, ValueError):
            continue
        acc = fams.setdefault(family_of(name), [0, 0, 0, 0, []])
        first = {json.dumps(c["members"], sort_keys=True): c for c in pa.get("clusters", [])}
        for c in pb.get("clusters", []):
            d = first.get(json.dumps(c["members"], sort_keys=True))
            if not d or d.get("status") != "accepted" or c.get("status") != "accepted":
                continue
            x, y = d.get("measured_saving_ns"), c.get("measured_saving_ns")
            if x and y:
                acc[0] += 1
                acc[1] += abs(x - y) <= 0.25 * abs(y)
                acc[2] += abs(d.get("est_saving_ns", 0) - x) <= 0.25 * abs(x)
                acc[3] += abs(c.get("est_saving_ns", 0) - y) <= 0.25 * abs(y)
                acc[4].append(x / y)
    every = [sum(v[i] for v in fams.values()) for i in range(4)] + [[r for v in fams.values() for r in v[4]]]
    if not every[0]:
        print("the same cluster measured in two passes: none accepted in both")
        return
    n, w = every[0], every[1]
    print(f"the same cluster measured in two passes (accepted in both): {n}; the first within +-25% of the "
          f"second: {100.0 * w / n:.0f}%; median first/second {statistics.median(every[4]):.2f}")
    if len(fams) > 1 or "/" in args[0].split("=", 1)[0]:
        print(f"  {'family':<14} {'clusters':>8} {'measured: pass 1 within 25% of pass 2':>40} "
              f"{'predicted within 25%: pass 1':>30} {'pass 2':>7} {'median pass 1/pass 2':>21}")
        for fam, v in sorted(fams.items()) + [("ALL", every)]:
            if not v[0]:
                continue
            print(f"  {fam:<14} {v[0]:>8} {100.0 * v[1] / v[0]:>39.0f}% {100.0 * v[2] / v[0]:>29.0f}% "
                  f"{100.0 * v[3] / v[0]:>6.0f}% {statistics.median(v[4]):>21.2f}")
        print("  (the same clusters: two measurements of one cluster agree within +-25% this often on this "
              "machine; a prediction checked against one of them cannot be expected to agree more often)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--repeat":
        repeat(sys.argv[2:])
        return
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
    if any("/" in r[0] for r in rows) or "--families" in sys.argv:
        families(rows)
    shared = sum(1 for r in rows if r[10])
    print(f"measured clusters whose benchmark was shared with an earlier one of the same signature: {shared} of {len(rows)}")
    plans = [a for a in sys.argv[1:] if "=" in a and not a.startswith("--")]
    w = withheld(plans)
    for model in sorted(w):
        print(f"withheld by the cost model, {model}: " + ", ".join(f"{k} {v}" for k, v in sorted(w[model].items())))
    tot = {}
    for m in w.values():
        for k, v in m.items():
            tot[k] = tot.get(k, 0) + v
    print("withheld by the cost model, all models: " + (", ".join(f"{k} {v}" for k, v in sorted(tot.items())) or "none"))
    measured_basis = sum(1 for r in rows if r[6].startswith("measured"))
    print(f"predictions resting on the measured profile: {measured_basis} of {len(rows)}")
    lookup = sum(1 for r in rows if "fused time measured in run" in r[6])
    print(f"fused kernels predicted from a measured kernel of the same signature: {lookup} of {len(rows)}")
    probe = sum(1 for r in rows if "(probe: " in r[6])
    print(f"fused library kernels predicted by the probe (the plan's layout, timed against the plain members): "
          f"{probe} of {len(rows)}")
    probe_alternatives(rows)
    inmodel_table(rows)
    isolation_split(rows)
    size_split(rows)
    self_agreement(rows)
    plan_totals(plans)
    if rows[0][7] is None:
        print("no --db: resolution unknown, every measured cluster counted")
    else:
        print("resolved: the paired unfused-fused differences' >=90% sign-test interval excludes 0, or their IQR is "
              "below the predicted magnitude; unresolved measurements are counted apart, not as hits or misses. "
              "unfused/fused meas/pred: the cluster's sub-graph measured in isolation against the basis's figures.")


if __name__ == "__main__":
    main()
