#!/usr/bin/env bash
# bench/bench_conv_tactic.sh — what the convolution tactics buy (docs/runtime.md "Convolution
# tactics"): `fuse-advise run MODEL` with FA_CONV_TACTIC=direct (the plan's 3x3 convolutions
# direct only, the unfused baseline's plain NCHW) against the default (both measured per
# convolution),
# one process per run, the two alternating ROUNDS times so that both see the same machine. Prints
# per model and tactic each run's end-to-end figures as run's answer states them (the applier's
# paired baseline and fused medians and the speedup), the plan layout chosen, how many Winograd
# convolutions the fused model ran per iteration, and the median over the rounds of the fused
# medians with the ratio measured/direct; `uptime`'s load before and after.
#
# env: BUILD (build), MODELS ("zoo:resnet50"; zoo:NAME or .onnx; an .onnx gets --shape batch=BATCH),
#      BATCH (1), ROUNDS (2), ITERS (10), THREADS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
MODELS=${MODELS:-"zoo:resnet50"}
BATCH=${BATCH:-1} ROUNDS=${ROUNDS:-2} ITERS=${ITERS:-10} THREADS=${THREADS:-2}
[ -x "$FA" ] || { echo "bench_conv_tactic.sh: build $FA first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# bench_conv_tactic: $(date -u '+%F %T') UTC, $(nproc) cores, threads $THREADS, iters $ITERS, rounds $ROUNDS, batch $BATCH, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for m in $MODELS; do
  name=$(basename "${m#zoo:}" .onnx)
  shape=()
  case $m in *.onnx) shape=(--shape "batch=$BATCH") ;; esac
  for t in direct measured; do : > "$tmp/$name-$t"; done
  for r in $(seq 1 "$ROUNDS"); do
    order=(direct measured)
    if (( r % 2 == 0 )); then order=(measured direct); fi
    for t in "${order[@]}"; do
      out=$tmp/$name-$t-$r
      FA_CONV_TACTIC=$t "$FA" run "$m" "${shape[@]}" --iters "$ITERS" --threads "$THREADS" --db "$out.db" --out "$out" \
        > "$out.txt" 2> "$out.err" || { echo "$name $t round $r: run failed"; tail -3 "$out.err"; continue; }
      e2e=$(grep -m1 '^End to end' "$out.txt" | sed 's/ (benchmark medians.*//')
      lay=$(grep -m1 '^plan layout' "$out.txt" | cut -d, -f1)
      kern=$(grep -m1 '^kernels per iteration' "$out.txt" | cut -d';' -f1)
      echo "$name $t round $r: $e2e | $lay | $kern"
      sed -n 's/.*, fused \([0-9.]*\) ms.*/\1/p' "$out.txt" | head -1 >> "$tmp/$name-$t"
    done
  done
  med() { sort -g "$1" | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
  d=$(med "$tmp/$name-direct") x=$(med "$tmp/$name-measured")
  echo "$name: fused median over rounds: direct $d ms, measured $x ms, measured/direct $(awk -v a="$d" -v b="$x" 'BEGIN {if (a > 0) printf "%.2f", b / a; else print "nan"}')"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
