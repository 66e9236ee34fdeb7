#!/usr/bin/env bash
# bench/bench_e2e.sh — end-to-end latency, one script, one run, same machine:
#   fuse-advise unfused baseline, fuse-advise fused plan (when the full `run` is available),
#   ONNX Runtime with graph optimizations disabled and with all enabled,
# on zoo:resnet50, corpus light_resnet50, zoo:mobilenetv2, zoo:bert-layer, zoo:gpt2-block.
# env: BUILD (default build), THREADS (2), ITERS (20), BATCHES ("1"), MODELS (override list),
#      NO_APPLY=1 to skip the fused run. onnxruntime comes from PyPI (bench only).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
THREADS=${THREADS:-2}
ITERS=${ITERS:-20}
BATCHES=${BATCHES:-1}
CORPUS=${FA_CORPUS:-$here/../shared/corpus}
MODELS=${MODELS:-"zoo:resnet50 $CORPUS/onnx/light/light_resnet50.onnx zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block"}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# ONNX Runtime from the oracles' python (scripts/setup.sh makes it: a venv in the build folder)
PY=${FA_PYTHON:-$BUILD/pyenv/bin/python3}
[ -x "$PY" ] || PY=python3
"$PY" -c "import onnxruntime, numpy" 2>/dev/null || { echo "bench_e2e: $PY has no onnxruntime (bash scripts/setup.sh)" >&2; exit 1; }

ort_ms() { # model level threads iters -> median ms
  "$PY" - "$@" <<'PY'
import sys, time, statistics
import numpy as np, onnxruntime as ort
path, level, threads, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.graph_optimization_level = {"none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                               "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(1)
feeds = {i.name: rng.uniform(-1, 1, [d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
         for i in s.get_inputs()}
for _ in range(3): s.run(None, feeds)
t = []
for _ in range(iters):
    t0 = time.perf_counter(); s.run(None, feeds); t.append((time.perf_counter() - t0) * 1e3)
print(f"{statistics.median(t):.3f}")
PY
}

printf "%-28s %5s %12s %12s %12s %12s %10s\n" model batch "unfused ms" "fused ms" "ORT none ms" "ORT all ms" "fused/ORT"
for m in $MODELS; do
  for b in $BATCHES; do
    name=$(basename "${m#zoo:}" .onnx)
    if [[ $m == zoo:* ]]; then
      "$FA" zoo "${m#zoo:}" --batch "$b" -o "$tmp/$name-b$b.onnx" >/dev/null
      onnx="$tmp/$name-b$b.onnx"; model="$onnx"
    else
      [ "$b" = 1 ] || continue   # corpus light models have a fixed batch of 1
      onnx="$m"; model="$m"
    fi
    "$FA" run "$model" --no-apply --iters "$ITERS" --warmup 3 --threads "$THREADS" --db "$tmp/b.db" > "$tmp/u.log"
    unf=$(sed -n 's/^baseline latency (median per iteration): \([0-9.]*\) ms.*/\1/p' "$tmp/u.log")
    fused="-"
    if [ -z "${NO_APPLY:-}" ] && "$FA" run "$model" --iters "$ITERS" --warmup 3 --threads "$THREADS" --db "$tmp/b.db" --out "$tmp/out-$name" > "$tmp/f.log" 2>&1; then
      fused=$(sed -n 's/^baseline .* fused \([0-9.]*\) ms.*/\1/p' "$tmp/f.log")
    fi
    on=$(ort_ms "$onnx" none "$THREADS" "$ITERS")
    oa=$(ort_ms "$onnx" all "$THREADS" "$ITERS")
    ratio=$("$PY" -c "f='$fused'; print('-' if f in ('','-') else f'{float(f)/float($oa):.2f}')")
    printf "%-28s %5s %12s %12s %12s %12s %10s\n" "$name" "$b" "$unf" "${fused:--}" "$on" "$oa" "$ratio"
  done
done
