#!/usr/bin/env bash
# bench/bench_ab_speedup.sh — two builds alternated on our own paired figure: the end-to-end
# speedup of one `fuse-advise run` (the fused model against the unfused baseline in interleaved
# rounds, the applier's end-to-end check), a fresh database and output folder per run. The peers'
# brackets in bench_e2e.sh move with the machine's fast and slow states as much as we do; a paired
# ratio inside one run does not, so this is how a change to the plan is compared build against build.
#
# usage: BUILD_A=<build dir> BUILD_B=<build dir> [ROUNDS=4] [ITERS=5] bash bench/bench_ab_speedup.sh MODEL...
#   MODEL: an .onnx path or zoo:NAME. Prints, per model, round and build: the speedup, the
#   clusters accepted and both medians; then per model and build the median speedup.
set -euo pipefail
: "${BUILD_A:?BUILD_A=<build dir of the first binary>}"
: "${BUILD_B:?BUILD_B=<build dir of the second binary>}"
ROUNDS=${ROUNDS:-4}
ITERS=${ITERS:-5}
[ $# -ge 1 ] || { echo "usage: BUILD_A=DIR BUILD_B=DIR bash $0 MODEL..." >&2; exit 2; }
for b in "$BUILD_A" "$BUILD_B"; do
    [ -x "$b/fuse-advise" ] || { echo "$b/fuse-advise: not an executable" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# bench_ab_speedup: $(date -u '+%F %T') UTC, A=$BUILD_A B=$BUILD_B, $ROUNDS rounds, --iters $ITERS, load $(cut -d' ' -f1 /proc/loadavg)"
for m in "$@"; do
    for r in $(seq 1 "$ROUNDS"); do
        for v in A B; do
            b=$BUILD_A; [ $v = B ] && b=$BUILD_B
            rm -rf "$work/o" "$work/r.db"
            "$b/fuse-advise" run "$m" --iters "$ITERS" --db "$work/r.db" --out "$work/o" > "$work/l.txt" 2>&1 || true
            sp=$(grep -oE 'speedup [0-9.]+x' "$work/l.txt" | head -1 | grep -oE '[0-9.]+' || echo -)
            acc=$(grep -oE 'clusters: [0-9]+ accepted' "$work/l.txt" | grep -oE '[0-9]+' || echo -)
            base=$(grep -oE 'baseline [0-9.]+ ms' "$work/l.txt" | head -1 | grep -oE '[0-9.]+' || echo -)
            fused=$(grep -oE 'fused [0-9.]+ ms' "$work/l.txt" | head -1 | grep -oE '[0-9.]+' || echo -)
            echo "$m round $r $v speedup $sp accepted $acc baseline_ms $base fused_ms $fused"
        done
    done
done | tee "$work/rows.txt"
for m in "$@"; do
    for v in A B; do
        vals=$(awk -v m="$m" -v v="$v" '$1 == m && $4 == v && $6 != "-" {print $6}' "$work/rows.txt" | sort -g)
        n=$(printf '%s\n' "$vals" | grep -c . || true)
        med=-
        if [ "$n" -gt 0 ]; then
            med=$(printf '%s\n' "$vals" | awk -v n="$n" '{a[NR]=$1} END {print (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2}')
        fi
        echo "$m $v median speedup $med over $n runs"
    done
done
