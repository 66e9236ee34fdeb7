#!/usr/bin/env bash
# model.folded.onnx of the ResNet models (zoo:resnet50 exported, and the corpus
# light_resnet50) loads in onnxruntime and matches the original model's outputs.
# Needs the python oracle (scripts/requirements-test.txt, in FA_PYTHON): exit 77 (skipped) without it.
set -euo pipefail
PY=${FA_PYTHON:-python3}
"$PY" -c "import onnxruntime, numpy" 2>/dev/null || { echo "SKIP: onnxruntime not installed for $PY (bash scripts/setup.sh)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$FA_CLI" zoo resnet50 -o resnet50.onnx
models=("$tmp/resnet50.onnx")
if [ -d "$FA_CORPUS" ]; then models+=("$FA_CORPUS/onnx/light/light_resnet50.onnx"); fi
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  "$FA_CLI" run "$m" --iters 3 --warmup 1 --db "$tmp/fa.db" --out "$tmp/out-$name" > "$tmp/$name.log"
  test -s "$tmp/out-$name/model.folded.onnx" || { echo "no model.folded.onnx for $name"; cat "$tmp/$name.log"; exit 1; }
  # the folded model has no BatchNormalization left
  "$PY" - "$tmp/out-$name/model.folded.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
bn = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
assert not bn, f"{len(bn)} BatchNormalization nodes left"
print("folded model valid, no BatchNormalization left")
PY
  "$PY" "$FA_SOURCE_DIR/tests/oracle/compare_models.py" "$m" "$tmp/out-$name/model.folded.onnx" --rtol 1e-3 --atol 1e-4
done
echo "folded_onnx_matches_ort: 1 passed, 0 failed"
