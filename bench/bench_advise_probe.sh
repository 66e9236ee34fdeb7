#!/bin/bash
# bench/bench_advise_probe.sh — `advise latest` on a stored run of a long elementwise chain, the
# CLI's whole path with its kernel probe (a cpu run on this machine: every cluster's sub-graphs
# built, the first ones compiled and timed until the probe's budget is spent). For each N the
# chain X -> N x Relu -> Y is written by bench_advise_chain --export, run once (--no-apply
# --iters 1 --warmup 0 --threads 1) into a fresh database, then `advise latest` is run under
# /usr/bin/time with a fresh kernel cache: prints N, CPU seconds (user + system), the largest
# resident set (MB; the largest of advise and the compiler processes it waited for), µs of CPU
# per node (a constant last column is linear growth) and `uptime`'s load before and after.
# Issue 38's target at N = 100,000: under 5 s CPU and 300 MB.
# Env: SIZES ("10000 30000 100000"), BUILD (build folder, default ./build).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
CLI=$BUILD/fuse-advise
GEN=$BUILD/bench/bench_advise_chain
SIZES=${SIZES:-"10000 30000 100000"}
[ -x "$CLI" ] && [ -x "$GEN" ] || { echo "bench_advise_probe.sh: build $CLI and $GEN first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_advise_probe.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# bench_advise_probe: $(date -u '+%F %T') UTC, $(nproc) cores, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-8s %8s %8s %12s  %s\n' nodes cpu_s max_mb us_per_node load_before/after
for n in $SIZES; do
  "$GEN" --export "$tmp/chain.onnx" "$n"
  rm -f "$tmp/chain.db"
  "$CLI" run "$tmp/chain.onnx" --no-apply --iters 1 --warmup 0 --threads 1 --db "$tmp/chain.db" > /dev/null
  load0=$(cut -d' ' -f1 /proc/loadavg)
  XDG_CACHE_HOME=$tmp/cache /usr/bin/time -o "$tmp/time" -f '%U %S %M' "$CLI" advise latest --db "$tmp/chain.db" > /dev/null
  load1=$(cut -d' ' -f1 /proc/loadavg)
  read -r user sys kb < "$tmp/time"
  awk -v n="$n" -v u="$user" -v s="$sys" -v kb="$kb" -v l0="$load0" -v l1="$load1" \
    'BEGIN { printf "%-8d %8.2f %8.0f %12.1f  %s/%s\n", n, u + s, kb / 1024, (u + s) * 1e6 / n, l0, l1 }'
done
