#!/usr/bin/env bash
# bench/bench_calibration.sh — how true the advisor's predictions are (issue 19): runs each model
# through `fuse-advise run` (baseline trace, plan, per-cluster apply and measurement) and prints,
# per cluster kind and in all, predicted (est_saving_ns) against measured (measured_saving_ns)
# over the clusters that were measured:
#   n measured, median ratio predicted/measured, share within +-25% of the measured saving,
#   count with the wrong sign (a saving predicted, a loss measured, or the reverse),
# and the same over the accepted clusters; then the same figures for the analytic formula the
# advisor used before issue 19 on the same clusters (bench/calibration.py). Targets (issue 19): >= 80% of accepted clusters within
# +-25%, < 5% of measured clusters with the wrong sign. Timings are as noisy as the machine:
# the script prints `uptime` with the figures.
# Per family (issue 36): each model belongs to a family (resnet; mobile-cnn: MobileNet, EfficientNet,
# RegNet, ShuffleNet, SqueezeNet, ConvNeXt; bert-llama-t5; gpt2-vit; other-cnn), and calibration.py
# prints per family and cluster kind: accepted within +-25%, wrong sign among the measured, the
# median |error|, the measurement's own repeatability and the term of the prediction that misses
# most (the stored terms against the paired benchmark's medians, calibration.py miss_term); then
# the same adjusted beside the raw counts: clusters "about 0" within their rounds' IQR count as
# agreement, and clusters sharing one benchmark (one signature in a plan) count once.
# The saving in the model (issue 36): beside the prediction's agreement with the isolated measurement,
# its agreement with each accepted cluster's saving in the model (plan.json inmodel_saving_ns, from
# the baseline's and the fused model's traces), per family and kind (within +-25%, wrong sign), the
# in-model / isolated ratio, and per plan the in-model savings summed beside the end-to-end saving.
# The models: the zoo and the corpus light models (MODELS), the exporter survey's exports made from
# torchvision / Hugging Face configs with random weights (SURVEY=DIR holding NAME-legacy.onnx, as
# docs/survey/export_models.py writes them; with TORCH_PY, the missing ones of SURVEY_NAMES are
# exported there first), and full-size BERT-base / GPT-2 small (LARGE="bert-base gpt2-small",
# made by bench/large_models.py into LARGE_DIR with TORCH_PY when absent).
# env: BUILD (default build), THREADS (2), ITERS (5), MODELS (override list), KEEP (a folder to
#      keep the plans in), PASSES (1): run every model PASSES times into the same database; from
#      the second pass on, a cluster whose fused kernel an earlier pass measured is predicted from
#      that measurement (basis "fused time measured in run N"), so pass 1 is the roofline's
#      prediction and pass 2 the lookup's, on the same machine. Needs python3 (standard library only).
#      SURVEY (a folder of survey exports; unset: none), SURVEY_NAMES (default every export the
#      survey makes: resnet18 mobilenet_v3_small efficientnet_b0 shufflenet_v2_x0_5 regnet_y_400mf
#      convnext_tiny vit_b_16 bert gpt2 t5 llama), SEQ (64: the transformers' sequence, bound with
#      --shape as bench_e2e.sh does), LARGE (unset: none; "bert-base gpt2-small"), LARGE_DIR
#      (${TMPDIR:-/tmp}/fa-large), TORCH_PY (a python with torch, torchvision, transformers and
#      onnx, for the exports; unset: only the exports already there run), APPLY_BUDGET (600).
# With PASSES >= 2 it also prints the noise floor: the clusters accepted in both passes, the share
# whose pass-1 measured saving is within +-25% of pass 2's (calibration.py --repeat).
# Resolution: a cluster counts as within +-25% or wrong sign only where its measured saving is
# resolved (bench/calibration.py: paired sign-test interval excludes 0, or IQR below the predicted
# magnitude); the unresolved ones are counted apart.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
THREADS=${THREADS:-2}
ITERS=${ITERS:-5}
SEQ=${SEQ:-64}
APPLY_BUDGET=${APPLY_BUDGET:-600}
CORPUS=${FA_CORPUS:-$here/../shared/corpus}
LIGHT="$CORPUS/onnx/light"
MODELS=${MODELS-"zoo:resnet50 zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block $LIGHT/light_resnet50.onnx $LIGHT/light_squeezenet.onnx $LIGHT/light_inception_v1.onnx $LIGHT/light_bvlc_alexnet.onnx $LIGHT/light_vgg19.onnx"}
SURVEY_NAMES=${SURVEY_NAMES:-"resnet18 mobilenet_v3_small efficientnet_b0 shufflenet_v2_x0_5 regnet_y_400mf convnext_tiny vit_b_16 bert gpt2 t5 llama"}
LARGE=${LARGE:-}
LARGE_DIR=${LARGE_DIR:-${TMPDIR:-/tmp}/fa-large}
tmp=${KEEP:-$(mktemp -d)}
mkdir -p "$tmp"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
[ -x "$FA" ] || { echo "bench_calibration: $FA not built" >&2; exit 1; }

family() { # the family of a model name (the issue 36 table's rows)
  case $1 in
    *resnet*) echo resnet ;;
    *mobilenet*|*efficientnet*|*regnet*|*shufflenet*|*squeezenet*|*convnext*) echo mobile-cnn ;;
    *bert*|*llama*|*t5*) echo bert-llama-t5 ;;
    *gpt2*|*vit*) echo gpt2-vit ;;
    *) echo other-cnn ;;
  esac
}

# every model as "PATH|NAME|SHAPE ARGS" (zoo models are written to ONNX first)
entries=()
for m in $MODELS; do
  name=$(basename "${m#zoo:}" .onnx)
  if [[ $m == zoo:* ]]; then
    "$FA" zoo "${m#zoo:}" -o "$tmp/$name.onnx" >/dev/null
    entries+=("$tmp/$name.onnx|$name|")
  elif [ -f "$m" ]; then
    entries+=("$m|$name|")
  else
    echo "bench_calibration: $m absent, skipped" >&2
  fi
done
if [ -n "${SURVEY:-}" ]; then
  mkdir -p "$SURVEY"
  for n in $SURVEY_NAMES; do
    f=$SURVEY/$n-legacy.onnx
    if [ ! -f "$f" ] && [ -n "${TORCH_PY:-}" ]; then
      "$TORCH_PY" "$here/docs/survey/export_models.py" "$SURVEY" "$n" > "$tmp/export-$n.log" 2>&1 || true
    fi
    [ -f "$f" ] || { echo "bench_calibration: $f absent (export it with TORCH_PY), skipped" >&2; continue; }
    shape="--shape batch=1"
    case $n in bert|gpt2|t5|llama) shape+=" --shape sequence=$SEQ" ;; esac
    entries+=("$f|survey_$n|$shape")
  done
fi
for n in $LARGE; do
  f=$LARGE_DIR/$n/$n.onnx
  if [ ! -f "$f" ] && [ -n "${TORCH_PY:-}" ]; then
    "$TORCH_PY" "$here/bench/large_models.py" "$LARGE_DIR" "$n" > "$tmp/large-$n.log" 2>&1 || true
    f=$(tail -n 1 "$tmp/large-$n.log" | awk -v n="$n" '$1 == n { print $2 }')
  fi
  [ -n "$f" ] && [ -f "$f" ] || { echo "bench_calibration: $n absent from $LARGE_DIR (make it with TORCH_PY), skipped" >&2; continue; }
  entries+=("$f|large_$n|")
done

echo "load: $(uptime)"
PASSES=${PASSES:-1}
declare -A plans_of
for pass in $(seq 1 "$PASSES"); do
for e in "${entries[@]}"; do
  IFS='|' read -r model name shape <<< "$e"
  fam=$(family "$name")
  out="$tmp/out-$name"; [ "$pass" = 1 ] || out="$tmp/out-$name-pass$pass"
  t0=$(date +%s)
  # shellcheck disable=SC2086 # the shape arguments are words
  if "$FA" run "$model" --iters "$ITERS" --threads "$THREADS" --db "$tmp/cal.db" --out "$out" \
       --apply-budget "$APPLY_BUDGET" $shape > "$out.log" 2>&1; then
    plans_of[$pass]+=" $fam/$name=$out/plan.json"
    # the run's own verdict on the machine's noise, and its baseline figures
    grep -hE "^baseline|timings are noisy" "$out.log" | sed "s/^/$name (pass $pass): /" || true
    echo "$name (pass $pass, family $fam): run took $(( $(date +%s) - t0 )) s"
  else
    echo "bench_calibration: run $name (pass $pass) failed (rc $?): $(tail -1 "$out.log")" >&2
  fi
done
done
# the ceilings the runs used (cached per device in the database): for the analytic comparison
read -r BW DISP < <("$FA" devices --json --db "$tmp/cal.db" |
  python3 -c 'import json,sys; d=json.load(sys.stdin)["cpu"]; print(d["mem_bw_gbs"], d["dispatch_ns"])')
for pass in $(seq 1 "$PASSES"); do
  echo "######## pass $pass of $PASSES"
  # shellcheck disable=SC2086 # one NAME=PLAN word per model
  python3 "$here/bench/calibration.py" --db "$tmp/cal.db" --bw "$BW" --dispatch "$DISP" ${plans_of[$pass]:-}
done
# the noise floor: the same clusters measured in pass 1 and pass 2 against each other
if [ "$PASSES" -ge 2 ]; then
  pairs=""
  for p1 in ${plans_of[1]:-}; do
    name=${p1%%=*}
    for p2 in ${plans_of[2]:-}; do [ "${p2%%=*}" = "$name" ] && pairs+=" $name=${p1#*=},${p2#*=}"; done
  done
  echo "######## noise floor (pass 1 against pass 2)"
  # shellcheck disable=SC2086
  python3 "$here/bench/calibration.py" --repeat $pairs
fi
echo "load: $(uptime)"
