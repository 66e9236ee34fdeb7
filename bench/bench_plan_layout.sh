#!/bin/bash
# bench/bench_plan_layout.sh — the fused plan's executor in two plan layouts, interleaved: for
# each model and batch, ROUNDS rounds of one bench_plan_layout process per layout (the order
# swapped every round), so that both layouts see the same machine; prints per layout the median
# and the minimum of the rounds' medians (ms; on a shared machine a burst of someone else's load
# lands in some rounds, and the minimum is the round it spared), the ratios of the second layout
# to the first, the op types' times of the last round, and `uptime`'s load before and after.
# Env: MODELS ("zoo:resnet50 zoo:mobilenetv2"; zoo:NAME or .onnx), BATCHES ("1 8"), LAYOUTS
#      ("nhwc nChw16c": FA_BLOCKED_LAYOUT values), ROUNDS (5), ITERS (10), THREADS (2), BUILD.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
BIN=$BUILD/bench/bench_plan_layout
MODELS=${MODELS:-"zoo:resnet50 zoo:mobilenetv2"}
BATCHES=${BATCHES:-"1 8"}
LAYOUTS=(${LAYOUTS:-nhwc nChw16c})
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-10}
THREADS=${THREADS:-2}
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000} # as run/exec/apply wait (docs/runtime.md)
[ -x "$BIN" ] || { echo "bench_plan_layout.sh: build $BIN first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# bench_plan_layout: $(date -u '+%F %T') UTC, $(nproc) cores, threads $THREADS, iters $ITERS x rounds $ROUNDS, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
for m in $MODELS; do
  for b in $BATCHES; do
    load0=$(cut -d' ' -f1 /proc/loadavg)
    for l in "${LAYOUTS[@]}"; do : > "$tmp/$l"; done
    for r in $(seq 1 "$ROUNDS"); do
      order=("${LAYOUTS[@]}")
      if (( r % 2 == 0 )); then order=("${LAYOUTS[1]}" "${LAYOUTS[0]}"); fi
      for l in "${order[@]}"; do
        FA_BLOCKED_LAYOUT=$l "$BIN" --threads "$THREADS" --iters "$ITERS" --batch "$b" "$m" > "$tmp/out-$l"
        sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p' "$tmp/out-$l" >> "$tmp/$l"
      done
    done
    line="$(basename "${m#zoo:}" .onnx) b$b |"
    med=() mn=()
    for l in "${LAYOUTS[@]}"; do
      v=$(sort -g "$tmp/$l" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
      w=$(sort -g "$tmp/$l" | head -1)
      med+=("$v") mn+=("$w")
      line="$line $l median $v min $w ms ($(sort -g "$tmp/$l" | tr '\n' ' ' | sed 's/ $//')) |"
    done
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b / a}'; }
    echo "$line ${LAYOUTS[1]}/${LAYOUTS[0]} median $(ratio "${med[0]}" "${med[1]}") min $(ratio "${mn[0]}" "${mn[1]}") | load $load0/$(cut -d' ' -f1 /proc/loadavg)"
    for l in "${LAYOUTS[@]}"; do sed -n "s/^  op /    $l /p" "$tmp/out-$l"; done
  done
done
