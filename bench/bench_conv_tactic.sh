#!/usr/bin/env bash
# bench/bench_conv_tactic.sh — what the convolution tactics buy (docs/runtime.md "Convolution
# tactics"): `fuse-advise run MODEL` under each of two environment settings, by default
# FA_CONV_TACTIC=direct (the plan's 3x3 convolutions direct only, the unfused baseline's plain
# NCHW) against FA_CONV_TACTIC=measured (the default: both measured per convolution); with
# VARIANTS="FA_PIXEL_CONV=0 FA_PIXEL_CONV=1" oneDNN's one-pixel convolutions against ours
# (docs/runtime.md "Kernels on cpu"); a setting FA=PATH runs that binary instead (two builds:
# VARIANTS="FA=/tmp/base/build/fuse-advise FA=build/fuse-advise", the base a `git worktree` of the
# commit to compare with, built the same way),
# one process per run, the two alternating ROUNDS times (the first of each pair swapping) so
# that both see the same machine. Prints per model and setting each run's end-to-end figures as
# run's answer states them (the applier's paired baseline and fused medians and the speedup), the
# plan layout chosen, the kernels per iteration, and the median over the rounds of the fused
# medians with the ratio second/first, and the median of the rounds' own ratios (each round's two
# runs back to back); `uptime`'s load before and after.
#
# env: BUILD (build), MODELS ("zoo:resnet50"; zoo:NAME or .onnx; an .onnx gets --shape batch=BATCH),
#      BATCH (1), ROUNDS (2), ITERS (10), THREADS (2), VARIANTS (two VAR=VALUE settings, as above).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
MODELS=${MODELS:-"zoo:resnet50"}
BATCH=${BATCH:-1} ROUNDS=${ROUNDS:-2} ITERS=${ITERS:-10} THREADS=${THREADS:-2}
read -r va vb <<< "${VARIANTS:-FA_CONV_TACTIC=direct FA_CONV_TACTIC=measured}"
[[ $va == *=* && $vb == *=* ]] || { echo "bench_conv_tactic.sh: VARIANTS must be two VAR=VALUE settings" >&2; exit 2; }
[ -x "$FA" ] || { echo "bench_conv_tactic.sh: build $FA first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# bench_conv_tactic: $(date -u '+%F %T') UTC, $(nproc) cores, threads $THREADS, iters $ITERS, rounds $ROUNDS, batch $BATCH, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for m in $MODELS; do
  name=$(basename "${m#zoo:}" .onnx)
  shape=()
  case $m in *.onnx) shape=(--shape "batch=$BATCH") ;; esac
  for t in a b; do : > "$tmp/$name-$t"; done
  : > "$tmp/$name-ratio"
  for r in $(seq 1 "$ROUNDS"); do
    order=(a b)
    if (( r % 2 == 0 )); then order=(b a); fi
    for t in "${order[@]}"; do
      out=$tmp/$name-$t-$r
      setting=$va
      [ "$t" = a ] || setting=$vb
      bin=$FA
      case $setting in FA=*) bin=${setting#FA=} ;; esac
      env "$setting" "$bin" run "$m" "${shape[@]}" --iters "$ITERS" --threads "$THREADS" --db "$out.db" --out "$out" \
        > "$out.txt" 2> "$out.err" || { echo "$name $setting round $r: run failed"; tail -3 "$out.err"; continue; }
      e2e=$(grep -m1 '^End to end' "$out.txt" | sed 's/ (benchmark medians.*//')
      lay=$(grep -m1 '^plan layout' "$out.txt" | cut -d, -f1)
      kern=$(grep -m1 '^kernels per iteration' "$out.txt" | cut -d';' -f1)
      echo "$name $setting round $r: $e2e | $lay | $kern"
      sed -n 's/.*, fused \([0-9.]*\) ms.*/\1/p' "$out.txt" | head -1 > "$out.fused"
      cat "$out.fused" >> "$tmp/$name-$t"
    done
    if [ -s "$tmp/$name-a-$r.fused" ] && [ -s "$tmp/$name-b-$r.fused" ]; then
      awk -v a="$(cat "$tmp/$name-a-$r.fused")" -v b="$(cat "$tmp/$name-b-$r.fused")" 'BEGIN {if (a > 0) print b / a}' >> "$tmp/$name-ratio"
    fi
  done
  med() { sort -g "$1" | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
  d=$(med "$tmp/$name-a") x=$(med "$tmp/$name-b") pr=$(med "$tmp/$name-ratio")
  echo "$name: fused median over rounds: $va $d ms, $vb $x ms, second/first $(awk -v a="$d" -v b="$x" 'BEGIN {if (a > 0) printf "%.2f", b / a; else print "nan"}'); rounds' own ratios: median $(awk -v r="$pr" 'BEGIN {printf "%.3f", r}') ($(sort -g "$tmp/$name-ratio" | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1}'))"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
