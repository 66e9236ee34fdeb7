#!/bin/bash
# bench/bench_graph_depth.sh — graph.svg's time against a model's depth (issue 39: `run` at 24
# layers within 1.3x of 12, once nearly all in graph.svg's Graphviz layout). For each N the model
# of bench_graph_depth (N layers of five ops, every layer reading one shared mask) is run once
# (--no-apply --iters 1 --warmup 0 --threads 1) into a fresh database, then `report latest` is
# timed under /usr/bin/time: prints N, the graph's nodes, the report's CPU seconds (user +
# system; graph.svg's layout is nearly all of it), ms of CPU per layer (a constant column is
# linear growth), the ratio to the previous N, and the load before/after. CPU time, not wall
# time: still, run it on a quiet machine.
# Env: SIZES ("12 24 48 96"), BUILD (build folder, default ./build).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
CLI=$BUILD/fuse-advise
GEN=$BUILD/bench/bench_graph_depth
SIZES=${SIZES:-"12 24 48 96"}
[ -x "$CLI" ] && [ -x "$GEN" ] || { echo "bench_graph_depth.sh: build $CLI and $GEN first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_graph_depth.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# bench_graph_depth: $(date -u '+%F %T') UTC, $(nproc) cores, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-7s %7s %8s %12s %7s  %s\n' layers nodes cpu_s ms_per_layer ratio load_before/after
prev=
for n in $SIZES; do
  "$GEN" "$tmp/deep.onnx" "$n"
  rm -rf "$tmp/deep.db" "$tmp/out"
  "$CLI" run "$tmp/deep.onnx" --no-apply --iters 1 --warmup 0 --threads 1 --db "$tmp/deep.db" --out "$tmp/run-out" > /dev/null
  load0=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -o "$tmp/time" -f '%U %S' "$CLI" report latest --db "$tmp/deep.db" -o "$tmp/out" > /dev/null 2> "$tmp/err" ||
    { echo "bench_graph_depth.sh: report of $n layers failed:" >&2; cat "$tmp/err" >&2; exit 1; }
  load1=$(cut -d' ' -f1 /proc/loadavg)
  read -r user sys < "$tmp/time"
  awk -v n="$n" -v u="$user" -v s="$sys" -v p="$prev" -v l0="$load0" -v l1="$load1" \
    'BEGIN { c = u + s; printf "%-7d %7d %8.2f %12.1f %7s  %s/%s\n", n, 5 * n + 1, c, c * 1e3 / n,
             p == "" ? "-" : sprintf("%.2f", c / p), l0, l1 }'
  prev=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
done
