#!/usr/bin/env bash
# bench/bench_views.sh — what views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) cost per
# iteration, in the baseline and the fused model, with two builds alternated in one window
# (docs/runtime.md "Memory plan": a view of an activation shares its bytes and moves nothing).
#
# For each round and model: `fuse-advise run MODEL` with BASE_BUILD's binary, then with BUILD's,
# each into its own run database; then, per binary and model, the time its traces spent in view
# ops per iteration (the kernels of nodes whose op is a view, summed over the timed iterations,
# divided by their count) and the applier's end-to-end medians. Kernel sums, not the iteration
# medians, carry the comparison: the machine's state moves whole iterations by more than the
# views weigh.
#
# env: BUILD (default build), BASE_BUILD (required: a build of the commit to compare with, e.g.
#      `git worktree add /tmp/base <commit>` built the same way), MODELS (.onnx paths; default the
#      exporter survey's gpt2, bert and llama legacy exports under SURVEY), SURVEY (/work/survey
#      style folder of NAME-legacy.onnx), SHAPE ("--shape batch=1 --shape sequence=64"), ROUNDS (3),
#      OPS (the op types summed; default "Reshape Flatten Squeeze Unsqueeze Identity"; "Pad" for
#      zero-width Pads, which are views too, and the Pads that copy).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
: "${BASE_BUILD:?set BASE_BUILD to the build folder of the commit to compare with}"
ROUNDS=${ROUNDS:-3}
OPS=${OPS:-"Reshape Flatten Squeeze Unsqueeze Identity"}
SHAPE=${SHAPE-"--shape batch=1 --shape sequence=64"} # SHAPE="" (set, empty): no shape arguments
if [ -z "${MODELS:-}" ]; then
  : "${SURVEY:?set MODELS or SURVEY (the folder of the exporter survey)}"
  MODELS="$SURVEY/gpt2-legacy.onnx $SURVEY/bert-legacy.onnx $SURVEY/llama-legacy.onnx"
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "# bench_views: $(date -u '+%F %T') UTC, base $BASE_BUILD, new $BUILD, $ROUNDS rounds, load $(cut -d' ' -f1 /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do
  for m in $MODELS; do
    for side in base new; do
      fa=$BUILD/fuse-advise; [ $side = base ] && fa=$BASE_BUILD/fuse-advise
      # shellcheck disable=SC2086 # the shape arguments are words
      "$fa" run "$m" $SHAPE --db "$tmp/$side-$(basename "$m" .onnx).db" --out "$tmp/out" > /dev/null 2>&1 \
        || { echo "bench_views: $side run of $m failed" >&2; exit 1; }
    done
  done
done
# shellcheck disable=SC2086 # MODELS is a list of paths
python3 - "$tmp" "$OPS" $MODELS <<'PY'
import os, sqlite3, statistics, sys
tmp, ops, models = sys.argv[1], sys.argv[2], sys.argv[3:]
VIEWS = tuple(ops.split()) + ("",)  # a one-element tuple stays a valid SQL list
print(f"| model | side | {' '.join(ops.split())}, baseline (us/iter) | fused (us/iter) | end-to-end medians baseline / fused (ms) |")
print("|---|---|---|---|---|")
for m in models:
    name = os.path.basename(m)[:-5]
    for side in ("base", "new"):
        c = sqlite3.connect(os.path.join(tmp, f"{side}-{name}.db"))
        cols = {"run": [], "fused": []}
        for rid, kind in c.execute("select id, kind from runs order by id"):
            if kind not in cols:
                continue
            its = c.execute("select count(distinct iter) from kernels where run_id=? and iter>=0", (rid,)).fetchone()[0]
            ns = c.execute(f"select coalesce(sum(end_ns-start_ns), 0) from kernels where run_id=? and iter>=0 and node>=0 "
                           f"and op_type in {VIEWS}", (rid,)).fetchone()[0]
            cols[kind].append(ns / its / 1e3 if its else 0.0)
        e2e = []
        for (rid,) in c.execute("select distinct run_id from benchmarks where cluster_id = -1 order by run_id").fetchall():
            med = {s: statistics.median(v[0] for v in c.execute(
                "select latency_ns from benchmarks where run_id=? and cluster_id=-1 and subject=?", (rid, s)))
                   for s in ("baseline", "fused")}
            e2e.append(f"{med['baseline'] / 1e6:.3f} / {med['fused'] / 1e6:.3f}")
        e2e = ", ".join(e2e)
        fmt = lambda v: ", ".join(f"{x:.1f}" for x in v) + (f" (median {statistics.median(v):.1f})" if v else "")
        print(f"| {name} | {side} | {fmt(cols['run'])} | {fmt(cols['fused'])} | {e2e or '-'} |")
PY
echo "# end $(date -u '+%T') UTC, load $(cut -d' ' -f1 /proc/loadavg)"
