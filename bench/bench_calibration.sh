#!/usr/bin/env bash
# bench/bench_calibration.sh — how true the advisor's predictions are (issue 19): runs each model
# through `fuse-advise run` (baseline trace, plan, per-cluster apply and measurement) and prints,
# per cluster kind and in all, predicted (est_saving_ns) against measured (measured_saving_ns)
# over the clusters that were measured:
#   n measured, median ratio predicted/measured, share within +-25% of the measured saving,
#   count with the wrong sign (a saving predicted, a loss measured, or the reverse),
# and the same over the accepted clusters. Targets (issue 19): >= 80% of accepted clusters within
# +-25%, < 5% of measured clusters with the wrong sign. Timings are as noisy as the machine:
# the script prints `uptime` with the figures.
# env: BUILD (default build), THREADS (2), ITERS (5), MODELS (override list), KEEP (a folder to
#      keep the plans in). Needs python3 (standard library only).
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
plans=()
for m in $MODELS; do
  name=$(basename "${m#zoo:}" .onnx)
  if [[ $m == zoo:* ]]; then
    "$FA" zoo "${m#zoo:}" -o "$tmp/$name.onnx" >/dev/null
    model="$tmp/$name.onnx"
  else
    [ -f "$m" ] || { echo "bench_calibration: $m absent, skipped" >&2; continue; }
    model="$m"
  fi
  if "$FA" run "$model" --iters "$ITERS" --threads "$THREADS" --db "$tmp/cal.db" --out "$tmp/out-$name" \
       > "$tmp/$name.log" 2>&1; then
    plans+=("$name=$tmp/out-$name/plan.json")
  else
    echo "bench_calibration: run $name failed (rc $?): $(tail -1 "$tmp/$name.log")" >&2
  fi
done
python3 - "${plans[@]}" <<'PY'
import json, sys, statistics
rows = []  # (model, kind, status, predicted_ns, measured_ns)
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    try:
        plan = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"{name}: no plan.json ({e})")
        continue
    for c in plan.get("clusters", []):
        m = c.get("measured_saving_ns")
        if m is None or c.get("status") in ("proposed", "refused", "not-tried", "rejected-error", "rejected-verify"):
            continue
        rows.append((name, c["kind"], c["status"], float(c["est_saving_ns"]), float(m)))

def stats(rs):
    n = len(rs)
    if not n:
        return None
    ratios = [p / m for _, _, _, p, m in rs if m != 0]
    within = sum(1 for _, _, _, p, m in rs if m != 0 and abs(p - m) <= 0.25 * abs(m))
    wrong = sum(1 for _, _, _, p, m in rs if (p > 0) != (m > 0))
    med = statistics.median(ratios) if ratios else float("nan")
    return n, med, 100.0 * within / n, wrong, 100.0 * wrong / n

def table(title, rs):
    print(title)
    print(f"  {'kind':<18} {'n':>4} {'median pred/meas':>17} {'within 25%':>11} {'wrong sign':>11}")
    for kind in sorted({r[1] for r in rs}) + ["all"]:
        sel = rs if kind == "all" else [r for r in rs if r[1] == kind]
        s = stats(sel)
        if s:
            print(f"  {kind:<18} {s[0]:>4} {s[1]:>17.2f} {s[2]:>10.0f}% {s[3]:>5} ({s[4]:.0f}%)")

for model in sorted({r[0] for r in rows}) + ["ALL MODELS"]:
    rs = rows if model == "ALL MODELS" else [r for r in rows if r[0] == model]
    table(f"{model}: measured clusters", rs)
    acc = [r for r in rs if r[2] == "accepted"]
    if acc:
        table(f"{model}: accepted clusters", acc)
PY
echo "load: $(uptime)"
