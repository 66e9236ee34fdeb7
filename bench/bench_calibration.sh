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
# env: BUILD (default build), THREADS (2), ITERS (5), MODELS (override list), KEEP (a folder to
#      keep the plans in), PASSES (1): run every model PASSES times into the same database; from
#      the second pass on, a cluster whose fused kernel an earlier pass measured is predicted from
#      that measurement (basis "fused time measured in run N"), so pass 1 is the roofline's
#      prediction and pass 2 the lookup's, on the same machine. Needs python3 (standard library only).
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
CORPUS=${FA_CORPUS:-$here/../shared/corpus}
LIGHT="$CORPUS/onnx/light"
MODELS=${MODELS:-"zoo:resnet50 zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block $LIGHT/light_resnet50.onnx $LIGHT/light_squeezenet.onnx $LIGHT/light_inception_v1.onnx $LIGHT/light_bvlc_alexnet.onnx $LIGHT/light_vgg19.onnx"}
tmp=${KEEP:-$(mktemp -d)}
mkdir -p "$tmp"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
echo "load: $(uptime)"
PASSES=${PASSES:-1}
declare -A plans_of
for pass in $(seq 1 "$PASSES"); do
for m in $MODELS; do
  name=$(basename "${m#zoo:}" .onnx)
  if [[ $m == zoo:* ]]; then
    "$FA" zoo "${m#zoo:}" -o "$tmp/$name.onnx" >/dev/null
    model="$tmp/$name.onnx"
  else
    [ -f "$m" ] || { echo "bench_calibration: $m absent, skipped" >&2; continue; }
    model="$m"
  fi
  out="$tmp/out-$name"; [ "$pass" = 1 ] || out="$tmp/out-$name-pass$pass"
  if "$FA" run "$model" --iters "$ITERS" --threads "$THREADS" --db "$tmp/cal.db" --out "$out" \
       > "$out.log" 2>&1; then
    plans_of[$pass]+=" $name=$out/plan.json"
    # the run's own verdict on the machine's noise, and its baseline figures
    grep -hE "^baseline|timings are noisy" "$out.log" | sed "s/^/$name (pass $pass): /" || true
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
