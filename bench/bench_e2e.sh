#!/usr/bin/env bash
# bench/bench_e2e.sh — end-to-end CPU latency against ONNX Runtime; one script, one run, one machine.
#
# For every model x batch, ROUNDS rounds, the variants interleaved inside each round:
#   ours   `fuse-advise run` (the unfused baseline and the fused plan, measured by the applier's own
#          paired, interleaved benchmark: unfused iteration, fused iteration, ...); the per-iteration
#          samples are read back from the run database (benchmarks table, cluster_id -1);
#   ORT    one ONNX Runtime session with graph optimisations disabled (ORT_DISABLE_ALL) and one with
#          all (ORT_ENABLE_ALL), alternating iteration by iteration, both created once per model.
# Samples of all rounds are pooled: median and IQR (p25-p75) per variant, in ms, plus the ratios
# the issue's targets use (unfused / ORT-disabled, fused / ORT-all), and `uptime`'s 1-minute load
# before and after each model (the machine is shared: quote the load with the figures).
#
# env: BUILD (default build), THREADS (2), ITERS (20 per round and variant), ROUNDS (3),
#      BATCHES ("1 8"), MODELS (override list; zoo:NAME or .onnx paths), LIGHT=1 to add the corpus
#      light models (batch 1 only: their batch is fixed), NO_APPLY=1 to skip the fused plan,
#      APPLY_BUDGET (seconds, passed to --apply-budget; default 600),
#      SURVEY=DIR to add the exporter survey's models (DIR/*-legacy.onnx, DIR/*-dynamo.onnx written by
#      docs/survey/export_models.py): their batch and sequence dims are symbolic, so they run at every
#      batch of BATCHES (`--shape batch=B`) and at sequence SEQ (default 128, `--shape sequence=SEQ`,
#      transformers only); ORT gets inputs of the same shapes; SURVEY_NAMES="resnet18 bert ..." keeps
#      only those models (both exporters),
#      KEEP=DIR to keep each model's run database and --out folder (DIR/NAME-bB.db, DIR/NAME-bB/),
#      ORT_SPIN=0 to make ONNX Runtime's intra-op threads wait passively
#      (session.intra_op.allow_spinning=0) as ours do (OMP_WAIT_POLICY=passive, docs/runtime.md);
#      default 1, ORT's own default (spinning), which a loaded machine punishes (bench/README.md).
# onnxruntime comes from the test oracles' python (scripts/setup.sh: BUILD/pyenv, or FA_PYTHON).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
THREADS=${THREADS:-2}
ITERS=${ITERS:-20}
ROUNDS=${ROUNDS:-3}
BATCHES=${BATCHES:-"1 8"}
APPLY_BUDGET=${APPLY_BUDGET:-600}
CORPUS=${FA_CORPUS:-$here/../shared/corpus}
MODELS=${MODELS:-"zoo:resnet50 zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block"}
if [ -n "${LIGHT:-}" ] && [ -d "$CORPUS/onnx/light" ]; then
  for f in "$CORPUS"/onnx/light/*.onnx; do MODELS="$MODELS $f"; done
fi
SEQ=${SEQ:-128}
SYMBOLIC=" "
if [ -n "${SURVEY:-}" ]; then
  for f in "$SURVEY"/*-legacy.onnx "$SURVEY"/*-dynamo.onnx; do
    [ -f "$f" ] || continue
    if [ -n "${SURVEY_NAMES:-}" ]; then
      base=$(basename "$f" .onnx); [[ " $SURVEY_NAMES " == *" ${base%-*} "* ]] || continue
    fi
    MODELS="$MODELS $f"; SYMBOLIC="$SYMBOLIC$f "
  done
fi
[ -z "${KEEP:-}" ] || mkdir -p "$KEEP"
PY=${FA_PYTHON:-$BUILD/pyenv/bin/python3}
[ -x "$PY" ] || PY=python3
"$PY" -c "import onnxruntime, numpy" 2>/dev/null || { echo "bench_e2e: $PY has no onnxruntime (bash scripts/setup.sh)" >&2; exit 1; }
[ -x "$FA" ] || { echo "bench_e2e: $FA not built" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "# bench_e2e: $(date -u '+%F %T') UTC, $(nproc) cores, threads $THREADS, iters $ITERS x rounds $ROUNDS, onnxruntime $("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)') (spinning ${ORT_SPIN:-1}), $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf "%-28s %3s | %-17s %-17s %-17s %-17s | %8s %8s %8s | %s\n" model b "unfused ms (IQR)" "fused ms (IQR)" "ORT none ms (IQR)" "ORT all ms (IQR)" \
  unf/ORTn fus/ORTa fus/unf "load before/after"
for m in $MODELS; do
  for b in $BATCHES; do
    name=$(basename "${m#zoo:}" .onnx)
    if [[ $m == zoo:* ]]; then
      "$FA" zoo "${m#zoo:}" --batch "$b" -o "$tmp/$name-b$b.onnx" >/dev/null
      onnx="$tmp/$name-b$b.onnx"
    else
      # the corpus light models have a fixed batch of 1; the survey's exports a symbolic one
      [ "$b" = 1 ] || [[ $SYMBOLIC == *" $m "* ]] || continue
      onnx="$m"
    fi
    load0=$(cut -d' ' -f1 /proc/loadavg)
    keep=${KEEP:-$tmp}
    rm -rf "$keep/$name-b$b.db" "$keep/$name-b$b"
    "$PY" - "$FA" "$onnx" "$THREADS" "$ITERS" "$ROUNDS" "$keep/$name-b$b.db" "$keep/$name-b$b" "${NO_APPLY:-}" "$APPLY_BUDGET" "$b" "$SEQ" "${ORT_SPIN:-1}" \
      > "$tmp/row" 2> "$tmp/err" <<'PY' || { echo "$name b$b: failed: $(tail -3 "$tmp/err")"; continue; }
import sqlite3, subprocess, sys, time
import numpy as np, onnxruntime as ort
fa, path, threads, iters, rounds, db, out, no_apply, budget, batch, seq, spin = sys.argv[1:13]
threads, iters, rounds = int(threads), int(iters), int(rounds)
# symbolic dims (the survey's exports): batch and sequence by name, any other one 1 (fuse-advise's default)
dims = {"batch": int(batch), "sequence": int(seq)}

def session(level):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    so.add_session_config_entry("session.intra_op.allow_spinning", "0" if spin == "0" else "1")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
sn, sa = session(ort.GraphOptimizationLevel.ORT_DISABLE_ALL), session(ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
rng = np.random.default_rng(1)
def fill(i):
    shape = [d if isinstance(d, int) else dims.get(d, 1) for d in i.shape]
    if "int" in i.type:
        return rng.integers(0, 2, shape).astype(np.int64 if "int64" in i.type else np.int32)
    return rng.uniform(-1, 1, shape).astype(np.float32)
feeds = {i.name: fill(i) for i in sn.get_inputs()}
shape_args = []
for d in sorted({d for i in sn.get_inputs() for d in i.shape if isinstance(d, str) and d in dims}):
    shape_args += ["--shape", f"{d}={dims[d]}"]
for _ in range(3):
    sn.run(None, feeds); sa.run(None, feeds)

S = {"unfused": [], "fused": [], "ort_none": [], "ort_all": []}
for r in range(rounds):
    # ours: the applier's paired benchmark (unfused and fused interleaved), samples from the db
    cmd = [fa, "run", path, "--iters", str(iters), "--warmup", "3", "--threads", str(threads), "--db", db,
           "--out", out, "--apply-budget", budget] + shape_args
    if no_apply: cmd.append("--no-apply")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"fuse-advise run failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    c = sqlite3.connect(db)
    rid = c.execute("select max(run_id) from benchmarks where subject='baseline' and cluster_id=-1").fetchone()[0]
    if rid is not None and not no_apply:
        for subj, key in (("baseline", "unfused"), ("fused", "fused")):
            S[key] += [x / 1e6 for (x,) in c.execute(
                "select latency_ns from benchmarks where run_id=? and subject=? and cluster_id=-1", (rid, subj))]
    else:  # --no-apply: the baseline median the run prints
        for line in p.stdout.splitlines():
            if line.startswith("baseline latency (median per iteration):"):
                S["unfused"].append(float(line.split(":")[1].split()[0]))
    c.close()
    # ORT: disabled and all, alternating iteration by iteration (order swapped each round)
    pair = [(sn, "ort_none"), (sa, "ort_all")]
    if r % 2: pair.reverse()
    for _ in range(iters):
        for s, key in pair:
            t0 = time.perf_counter(); s.run(None, feeds); S[key].append((time.perf_counter() - t0) * 1e3)

def stat(v):
    if not v: return None
    q = np.percentile(v, [25, 50, 75])
    return q[1], q[0], q[2]
st = {k: stat(v) for k, v in S.items()}
def cell(k):
    x = st[k]
    return "-" if x is None else f"{x[0]:.3f} ({x[1]:.2f}-{x[2]:.2f})"
def ratio(a, b):
    return "-" if st[a] is None or st[b] is None else f"{st[a][0] / st[b][0]:.2f}"
print(f"{cell('unfused'):<17} {cell('fused'):<17} {cell('ort_none'):<17} {cell('ort_all'):<17} | "
      f"{ratio('unfused', 'ort_none'):>8} {ratio('fused', 'ort_all'):>8} {ratio('fused', 'unfused'):>8}")
PY
    load1=$(cut -d' ' -f1 /proc/loadavg)
    printf "%-28s %3s | %s | %s/%s\n" "$name" "$b" "$(cat "$tmp/row")" "$load0" "$load1"
  done
done
