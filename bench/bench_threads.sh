#!/usr/bin/env bash
# bench/bench_threads.sh — the executor's OpenMP wait policy, quiet and under load (issue 35).
#
# Our kernels and oneDNN's share libgomp's pool. Between two parallel regions an idle thread
# spins GOMP_SPINCOUNT times before it sleeps on a futex (libgomp's default: 300,000 spins with
# OMP_WAIT_POLICY unset, none with passive, "forever" with active). A sleeping thread costs a futex
# wake-up at the next region — per kernel, so small kernels pay most — while a spinning one takes
# a core the machine's other processes may need. This script measures, per policy:
#   quiet   nothing else running;
#   loaded  LOAD busy processes (default: one per core) running `yes >/dev/null` for the window;
# the unfused baseline's median iteration (`fuse-advise run MODEL --no-apply`, one process per
# policy, the policies interleaved ROUNDS times), and ORT-all with its own defaults
# (bench/peer.py ort-all, its own process) in the same windows as the yardstick of "no worse
# than ORT's own slowdown under the same load".
#
# env: BUILD (build), THREADS (2), ITERS (30), ROUNDS (3), LOAD (nproc), MODELS (the four zoo
#      models; zoo:NAME or an .onnx file, its symbolic dims 1 on both sides), SHAPE (extra `run`
#      options, e.g. "--shape sequence=64"), POLICIES ("passive spin1k spin10k spin100k spin300k
#      active"; spin300k is libgomp's own default count with OMP_WAIT_POLICY unset, which `run`
#      replaces; "default" is `run` as it comes, "nowake" the same without the executor's
#      wake-ahead over stretches of one-thread kernels, FA_WAKE_AHEAD=0), ORT_PY.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
SHAPE=${SHAPE:-} THREADS=${THREADS:-2} ITERS=${ITERS:-30} ROUNDS=${ROUNDS:-3} LOAD=${LOAD:-$(nproc)}
MODELS=${MODELS:-"zoo:resnet50 zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block"}
POLICIES=${POLICIES:-"passive spin1k spin10k spin100k spin300k active"}
ORT_PY=${ORT_PY:-$BUILD/pyenv/bin/python3}
tmp=$(mktemp -d)
busy=()
stop_load() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; busy=(); }
trap 'stop_load; rm -rf "$tmp"' EXIT

policy_env() { # the environment of one policy; an explicit GOMP_SPINCOUNT is libgomp's spin
  # count whatever OMP_WAIT_POLICY says (libgomp env.c), so spinN holds under `run`'s passive re-exec
  case $1 in
    passive) echo "OMP_WAIT_POLICY=passive" ;;
    active) echo "OMP_WAIT_POLICY=active" ;;
    spin*) local n=${1#spin}; n=${n/k/000}; echo "GOMP_SPINCOUNT=$n" ;;
    default) ;;                                # run's own: GOMP_SPINCOUNT=1000 and wake-ahead
    nowake) echo "FA_WAKE_AHEAD=0" ;;          # run's own spin count, no wake-ahead (docs/runtime.md)
  esac
}
ours() { # ours POLICY ONNX -> median ms of the unfused baseline
  env $(policy_env "$1") "$FA" run "$2" --no-apply --iters "$ITERS" --threads "$THREADS" --trace-span 0 $SHAPE \
    --db "$tmp/t.db" 2>/dev/null | sed -n 's/^baseline latency (median per iteration): \([0-9.]*\) ms.*/\1/p'
}
ort() { # ort ONNX -> median ms
  "$ORT_PY" "$here/bench/peer.py" ort-all "$1" --threads "$THREADS" --iters "$ITERS" 2>/dev/null |
    "$ORT_PY" -c 'import json,sys,statistics; r=json.load(sys.stdin); print("%.3f" % statistics.median(r["samples_ms"]))'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

echo "# bench_threads: $(date -u '+%F %T') UTC, $(nproc) cores, threads $THREADS, iters $ITERS, rounds $ROUNDS, load procs $LOAD, $(git -C "$here" rev-parse --short HEAD)"
for cond in quiet loaded; do
  [ $cond = loaded ] && for ((i = 0; i < LOAD; i++)); do yes >/dev/null & busy+=($!); done
  sleep 1
  for m in $MODELS; do
    name=$(basename "${m#zoo:}" .onnx)
    if [[ $m == zoo:* ]]; then "$FA" zoo "$name" -o "$tmp/$name.onnx" >/dev/null; else cp "$m" "$tmp/$name.onnx"; fi
    declare -A S=()
    l0=$(cut -d' ' -f1 /proc/loadavg)
    for ((r = 0; r < ROUNDS; r++)); do
      S[ort]+=" $(ort "$tmp/$name.onnx")"
      for p in $POLICIES; do S[$p]+=" $(ours "$p" "$tmp/$name.onnx")"; done
    done
    line=$(printf "%-6s %-12s ort-all %7s |" "$cond" "$name" "$(echo "${S[ort]}" | median)")
    for p in $POLICIES; do line+=$(printf " %s %7s" "$p" "$(echo "${S[$p]}" | median)"); done
    echo "$line | load $l0/$(cut -d' ' -f1 /proc/loadavg)"
    unset S
  done
  stop_load
done
echo "# medians over rounds of each process's median iteration (ms), unfused baseline; ort-all: ONNX Runtime with all optimisations and its own defaults"
