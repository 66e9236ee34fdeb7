#!/usr/bin/env bash
# bench/gpu-check.sh — the one device check of the cuda target (docs/cuda.md, "Device check"):
# build, GPU tests, measured ceilings, the baseline on zoo:resnet50 / zoo:bert-layer /
# zoo:gpt2-block with --target cuda, and the CUPTI collector's overhead (the same run traced vs
# untraced, wall time). Sized to finish well under 8 minutes on one H200; every step has its own
# timeout and the script stops starting new steps past a total budget (GPU_CHECK_BUDGET_S, 420 s).
# Writes a summary to $OUT/gpu-check-summary.txt when $OUT is set, else ./gpu-check-summary.txt.
# Exit status: 0 when every step passed, 1 otherwise (the summary says which).
# GPU_CHECK_BUILD=DIR picks the build folder (default build-gpu-check); GPU_CHECK_SKIP_BUILD=1
# skips configure/build for a rerun in the same lease. GPU_CHECK_KIT=DIR runs the programs of a
# kit packed here by scripts/gpu-kit.sh instead of building: for a bare GPU machine without
# the Debian -dev packages or a package registry (docs/cuda.md, "The GPU kit").
set -u

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${GPU_CHECK_BUILD:-$SRC/build-gpu-check}
BUDGET=${GPU_CHECK_BUDGET_S:-420}
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; SUMMARY=$OUT/gpu-check-summary.txt; else SUMMARY=$PWD/gpu-check-summary.txt; fi
LOGS=$BUILD/gpu-check-logs
T0=$(date +%s)
FAILED=0
: >"$SUMMARY"

say() { echo "$*" | tee -a "$SUMMARY"; }
now_ms() { date +%s%3N; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }

# step NAME TIMEOUT_S CMD...: runs CMD with a timeout, logs to $LOGS/NAME.log, records rc and
# seconds in the summary with the log's last lines.
step() {
    local name=$1 limit=$2
    shift 2
    local l
    l=$(left)
    if [ "$l" -le 10 ]; then say "[$name] SKIPPED: total budget ${BUDGET}s spent"; FAILED=1; return 1; fi
    [ "$limit" -gt "$l" ] && limit=$l
    local s e rc
    s=$(now_ms)
    timeout --kill-after=5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    e=$(now_ms)
    if [ $rc -eq 0 ]; then say "[$name] ok in $(((e - s) / 1000)).$(((e - s) % 1000 / 100))s"
    else say "[$name] FAILED rc=$rc in $(((e - s) / 1000))s (timeout ${limit}s; 124 = timed out)"; FAILED=1; fi
    tail -n "${TAIL:-15}" "$LOGS/$name.log" | sed 's/^/    /' >>"$SUMMARY"
    return $rc
}

KIT=""
if [ -n "${GPU_CHECK_KIT:-}" ]; then
    KIT=$(cd "$GPU_CHECK_KIT" && pwd) || { echo "gpu-check: no kit folder $GPU_CHECK_KIT" >&2; exit 1; }
    BUILD=${GPU_CHECK_BUILD:-$SRC/build-gpu-check}
    LOGS=$BUILD/gpu-check-logs
    # The machine's own CUDA: the toolkit install and the pip wheels of the python that holds
    # PyTorch (cuDNN is there); fuse-advise opens them with dlopen (FA_CUDA_LIBDIR), the tracer
    # links libcupti through LD_LIBRARY_PATH.
    cuda_dirs=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64 \
        /usr/local/cuda/targets/x86_64-linux/lib $(python3 -c 'import glob, os, sys
for s in sys.path:
    for p in sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib"))) + sorted(glob.glob(os.path.join(s, "nvidia", "cu*", "lib"))):
        print(p)' 2>/dev/null); do
        [ -d "$d" ] && case ":$cuda_dirs:" in *":$d:"*) ;; *) cuda_dirs=${cuda_dirs:+$cuda_dirs:}$d ;; esac
    done
    export FA_CUDA_LIBDIR=$cuda_dirs
    export LD_LIBRARY_PATH=$KIT/lib${cuda_dirs:+:$cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export GVBINDIR=$KIT/lib/graphviz
    if [ -z "${FA_CUDNN_LIB:-}" ]; then
        IFS=: read -r -a _dirs <<<"$cuda_dirs"
        for d in "${_dirs[@]}"; do [ -e "$d/libcudnn.so.9" ] && { export FA_CUDNN_LIB=$d/libcudnn.so.9; break; }; done
    fi
fi

mkdir -p "$BUILD" "$LOGS"
say "fuse-advise gpu-check $(date -u +%FT%TZ) on $(hostname)"
say "source $SRC ($(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo no-git)), build ${KIT:-$BUILD}"
[ -n "$KIT" ] && say "kit $KIT: FA_CUDA_LIBDIR=$FA_CUDA_LIBDIR FA_CUDNN_LIB=${FA_CUDNN_LIB:-none}"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$SUMMARY"
else
    say "gpu: nvidia-smi not found"
fi

# 1. build (Release, all targets, 16 jobs); GPU_CHECK_SKIP_BUILD=1 reuses $BUILD as it is (reruns)
if [ -z "${GPU_CHECK_SKIP_BUILD:-}" ] && [ -z "$KIT" ]; then
    step configure 120 cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release || { say "configure failed: stopping"; exit 1; }
    step build 240 cmake --build "$BUILD" -j16 || { say "build failed: stopping"; exit 1; }
fi
FA=$BUILD/fuse-advise
TESTS=$BUILD/tests
BIN=$BUILD
if [ -n "$KIT" ]; then FA=$KIT/bin/fuse-advise TESTS=$KIT/tests BIN=$KIT/bin; fi
DB=$BUILD/gpu-check.db
rm -f "$DB" "$DB-wal" "$DB-shm"

# The injection tracer: built by collector/cupti/CMakeLists.txt when the top level adds it;
# otherwise compiled here from the same sources (fallback, logged).
if [ ! -f "$BIN/libfuse-advise-cupti.so" ]; then
    CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
    step tracer-fallback 60 cc -shared -fPIC -O2 -std=c11 -D_GNU_SOURCE -DFA_HAVE_CUDA=1 -fvisibility=hidden \
        -I"$SRC" -I"$BUILD" -I"$CUDA_HOME/include" \
        "$SRC/collector/cupti/injection.c" "$SRC/collector/cupti/cupti.c" "$SRC/collector/trace.c" \
        "$BUILD/libfa_core.a" -L"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/lib64" -Wl,--as-needed \
        -Wl,--exclude-libs,ALL -Wl,-Bsymbolic -lcupti -lcrypto -lm -lpthread -o "$BUILD/libfuse-advise-cupti.so"
fi

# 2. GPU tests, run directly so their figures (per-model match against cpu, measured ceilings,
#    CUPTI attribution counts) land in the summary; rc 77 here means no usable device.
TAIL=40 step gpu-tests 200 env FA_BUILD_DIR="$BIN" FA_CLI="$FA" "$TESTS/test_cuda_gpu"
if [ -n "$KIT" ]; then
    TAIL=20 step fused-gpu-tests 120 env FA_BUILD_DIR="$BIN" FA_CLI="$FA" "$TESTS/test_cuda_fused_gpu"
    TAIL=8 step cuda-unit-tests 120 bash -c 'for t in test_cuda_exec test_cupti; do env FA_BUILD_DIR="$1" FA_CLI="$2" "$3/$t" || exit; done' \
        _ "$BIN" "$FA" "$TESTS"
else
    TAIL=8 step cuda-unit-tests 120 ctest --test-dir "$BUILD" -R 'test_cuda_exec|test_cupti|test_cuda_fused_gpu' --output-on-failure
fi

# 3. ceilings: measured HBM bandwidth, FP32 peak, launch latency (stored in the run database)
TAIL=30 step devices 60 "$FA" devices --measure --db "$DB"

# 4. the baseline on the cuda target, then analyze/advise on the stored run (apply generates
#    cpu kernels only, so --no-apply)
for m in resnet50 bert-layer gpt2-block; do
    TAIL=25 step "run-$m" 90 "$FA" run "zoo:$m" --target cuda --no-apply --iters 20 --warmup 3 --db "$DB" --tag "gpu-$m" &&
        { TAIL=20 step "analyze-$m" 30 "$FA" analyze --db "$DB";
          TAIL=20 step "advise-$m" 30 "$FA" advise --db "$DB"; }
done

# 5. collector overhead: the same cuda run untraced vs under `fuse-advise trace` (best of 3 each)
ODB=$BUILD/overhead.db
best_untraced=999999999 best_traced=999999999
for _ in 1 2 3; do
    [ "$(left)" -le 30 ] && break
    rm -f "$ODB"*
    s=$(now_ms); timeout 60 "$FA" run zoo:bert-layer --target cuda --no-apply --iters 50 --warmup 3 --db "$ODB" >"$LOGS/overhead-untraced.log" 2>&1; rc1=$?; e=$(now_ms)
    [ $rc1 -eq 0 ] && [ $((e - s)) -lt $best_untraced ] && best_untraced=$((e - s))
    rm -f "$ODB"*
    s=$(now_ms); timeout 90 "$FA" trace --db "$DB" --tag overhead -- "$FA" run zoo:bert-layer --target cuda --no-apply --iters 50 --warmup 3 --db "$ODB" >"$LOGS/overhead-traced.log" 2>&1; rc2=$?; e=$(now_ms)
    [ $rc2 -eq 0 ] && [ $((e - s)) -lt $best_traced ] && best_traced=$((e - s))
done
if [ $best_untraced -lt 999999999 ] && [ $best_traced -lt 999999999 ]; then
    say "[collector-overhead] bert-layer 50 iters: untraced ${best_untraced} ms, traced ${best_traced} ms (best of 3), overhead $(awk -v a=$best_untraced -v b=$best_traced 'BEGIN{printf "%.1f", 100*(b-a)/a}')%"
    sed 's/^/    /' "$LOGS/overhead-traced.log" | tail -n 20 >>"$SUMMARY"
else
    say "[collector-overhead] FAILED (untraced rc=${rc1:-?}, traced rc=${rc2:-?}; logs in $LOGS)"
    tail -n 15 "$LOGS/overhead-traced.log" 2>/dev/null | sed 's/^/    /' >>"$SUMMARY"
    FAILED=1
fi

TAIL=20 step runs 20 "$FA" runs --db "$DB"
say "total $(($(date +%s) - T0)) s; $([ $FAILED -eq 0 ] && echo 'all steps passed' || echo 'some steps FAILED')"
exit $FAILED
