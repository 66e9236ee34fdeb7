#!/usr/bin/env bash
# bench/bench_e2e.sh — end-to-end CPU latency against ONNX Runtime and torch.compile, fairly:
# one engine live at a time, each in its own process with its own defaults, bracketed before and
# after ours in one window.
#
# Per model x batch, one window:
#   peers (before)  ORT with optimisations disabled, ORT with all, torch eager, torch.compile — each
#                   `bench/peer.py ENGINE` alone in a fresh process (ORT keeps its spinning intra-op
#                   pool, its default; torch flushes denormals: random weights);
#   ours            `fuse-advise run MODEL` with our defaults: the unfused baseline and the fused plan
#                   from the applier's paired end-to-end benchmark (benchmarks table, cluster -1);
#   peers (after)   the same peers again, in reverse order.
# Nothing else of ours is alive while a peer runs and no peer while ours runs (two live 2-thread
# pools on 2 cores slow each other 2x or more). Per engine: the median and IQR of its samples
# pooled over both brackets, and, for peers, the before/after medians (how far the machine drifted
# across the window); the ratios the targets use; the 1-minute load before and after the window.
#
# env: BUILD (default build), THREADS (2), ITERS (timed iterations per engine and bracket, 50),
#      BATCHES ("1 8"), MODELS (zoo:NAME or .onnx paths; default the four zoo models),
#      SURVEY=DIR to add the exporter survey's models (DIR/NAME-legacy.onnx, written by
#      docs/survey/export_models.py; any .onnx: its symbolic dims named batch and sequence bound with
#      --shape as the peers bind them, a fixed batch run at its own batch only; SEQ default 64),
#      SURVEY_NAMES ("resnet18 bert ..."), PEERS ("ort-none ort-all torch-eager torch-compile"),
#      ORT_PY (python with onnxruntime; default BUILD/pyenv/bin/python3), TORCH_PY (python with
#      torch, torchvision, transformers; torch columns "-" without it — never a build or test
#      dependency), KEEP=DIR keeps each run database and --out folder, APPLY_BUDGET (600),
#      WINDOWS (1): windows per model x batch. This machine has minutes in which every engine runs
#      1.7-2x slower, and they begin and end within seconds (bench/README.md "Windows"): a window
#      whose peer brackets agree can still have caught ours in the other state. With WINDOWS > 1 a
#      last row per model x batch gives each ratio's median over the windows whose before/after
#      medians of every peer agree within AGREE (0.10, relative), and how many did.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
THREADS=${THREADS:-2}
ITERS=${ITERS:-50}
BATCHES=${BATCHES:-"1 8"}
SEQ=${SEQ:-64}
APPLY_BUDGET=${APPLY_BUDGET:-600}
WINDOWS=${WINDOWS:-1}
AGREE=${AGREE:-0.10}
PEERS=${PEERS:-"ort-none ort-all torch-eager torch-compile"}
MODELS=${MODELS:-"zoo:resnet50 zoo:mobilenetv2 zoo:bert-layer zoo:gpt2-block"}
ORT_PY=${ORT_PY:-$BUILD/pyenv/bin/python3}
TORCH_PY=${TORCH_PY:-}
declare -A SURVEY_OF=()
if [ -n "${SURVEY:-}" ]; then
  for f in "$SURVEY"/*-legacy.onnx; do
    [ -f "$f" ] || continue
    n=$(basename "$f" -legacy.onnx)
    [ -z "${SURVEY_NAMES:-}" ] || [[ " $SURVEY_NAMES " == *" $n "* ]] || continue
    MODELS="$MODELS $f"; SURVEY_OF[$f]=$n
  done
fi
[ -x "$FA" ] || { echo "bench_e2e: $FA not built" >&2; exit 1; }
"$ORT_PY" -c "import onnxruntime, numpy" 2>/dev/null || { echo "bench_e2e: $ORT_PY has no onnxruntime (bash scripts/setup.sh --test)" >&2; exit 1; }
[ -z "${KEEP:-}" ] || mkdir -p "$KEEP"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

peer() { # peer ENGINE ONNX MODEL BATCH SURVEYNAME -> one JSON line on stdout, or nothing
  local py=$ORT_PY
  if [[ $1 == torch-* ]]; then
    [ -n "$TORCH_PY" ] || return 0
    py=$TORCH_PY
    # torch needs the model's own definition: a survey export's builder, or torchvision's CNNs
    [ -n "$5" ] || [[ $3 == zoo:resnet50 || $3 == zoo:mobilenetv2 ]] || return 0
  fi
  local model=$2; [[ $1 == torch-* && -z $5 ]] && model=$3
  "$py" "$here/bench/peer.py" "$1" "$model" --threads "$THREADS" --iters "$ITERS" --batch "$4" --seq "$SEQ" \
    ${5:+--survey "$5"} 2>>"$tmp/peer.err" || true
}

echo "# bench_e2e: $(date -u '+%F %T') UTC, $(nproc) cores, threads $THREADS, $ITERS iterations per engine and bracket," \
     "onnxruntime $("$ORT_PY" -c 'import onnxruntime; print(onnxruntime.__version__)')," \
     "torch $([ -n "$TORCH_PY" ] && "$TORCH_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none)," \
     "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
for m in $MODELS; do
  for b in $BATCHES; do
    name=$(basename "${m#zoo:}" .onnx)
    sname=${SURVEY_OF[$m]:-}
    shape_args=()
    if [[ $m == zoo:* ]]; then
      "$FA" zoo "${m#zoo:}" --batch "$b" -o "$tmp/$name-b$b.onnx" >/dev/null
      onnx=$tmp/$name-b$b.onnx
    else
      onnx=$m
      # the symbolic dims the peers bind (peer.py: "batch", "sequence"), bound the same way for ours;
      # a model with a fixed batch runs at its own batch only
      dims=$("$ORT_PY" -c 'import onnx, sys
m = onnx.load(sys.argv[1], load_external_data=False)
print(" ".join(sorted({d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param})))' "$onnx")
      if [[ " $dims " == *" batch "* ]]; then shape_args=(--shape "batch=$b")
      elif [ "$b" != 1 ]; then echo "$name b$b: the model's batch is fixed (no symbolic dim 'batch'): skipped"; continue
      fi
      [[ " $dims " != *" sequence "* ]] || shape_args+=(--shape "sequence=$SEQ")
    fi
    : >"$tmp/windows.jsonl"
    for w in $(seq "$WINDOWS"); do
    keep=${KEEP:-$tmp}
    db=$keep/$name-b$b.db; rm -rf "$db" "$keep/$name-b$b"
    load0=$(cut -d' ' -f1 /proc/loadavg)
    : >"$tmp/before.jsonl"; : >"$tmp/after.jsonl"
    for e in $PEERS; do peer "$e" "$onnx" "$m" "$b" "$sname" >>"$tmp/before.jsonl"; done
    "$FA" run "$onnx" --iters "$ITERS" --threads "$THREADS" --db "$db" --out "$keep/$name-b$b" \
      --apply-budget "$APPLY_BUDGET" "${shape_args[@]}" >"$tmp/ours.out" 2>"$tmp/ours.err" \
      || { echo "$name b$b: fuse-advise run failed: $(tail -2 "$tmp/ours.err")"; continue; }
    for e in $(echo "$PEERS" | tr ' ' '\n' | tac); do peer "$e" "$onnx" "$m" "$b" "$sname" >>"$tmp/after.jsonl"; done
    load1=$(cut -d' ' -f1 /proc/loadavg)
    "$ORT_PY" - "$db" "$tmp/before.jsonl" "$tmp/after.jsonl" "$name" "$b" "$load0" "$load1" "$tmp/windows.jsonl" "$AGREE" <<'PY'
import json, sqlite3, sys
import numpy as np
db, before, after, name, b, l0, l1, wfile, agree = sys.argv[1:10]
S, drift = {}, {}
for side, path in (("before", before), ("after", after)):
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        S.setdefault(r["engine"], []).extend(r["samples_ms"])
        drift.setdefault(r["engine"], {})[side] = float(np.median(r["samples_ms"]))
c = sqlite3.connect(db)
rid = c.execute("select max(run_id) from benchmarks where subject='baseline' and cluster_id=-1").fetchone()[0]
for subj, key in (("baseline", "ours-unfused"), ("fused", "ours-fused")):
    if rid is not None:
        v = [x / 1e6 for (x,) in c.execute(
            "select latency_ns from benchmarks where run_id=? and subject=? and cluster_id=-1", (rid, subj))]
        if v:
            S[key] = v
med = {k: float(np.median(v)) for k, v in S.items() if v}
def cell(k):
    if k not in S: return "-"
    q = np.percentile(S[k], [25, 50, 75])
    return f"{q[1]:.3f} ({q[0]:.2f}-{q[2]:.2f})"
def ratio(a, b_):
    return f"{med[a] / med[b_]:.2f}" if a in med and b_ in med else "-"
cols = ["ours-unfused", "ours-fused", "ort-none", "ort-all", "torch-eager", "torch-compile"]
print(f"{name:<22} {b:>2} | " + " ".join(f"{cell(k):<20}" for k in cols) +
      f" | {ratio('ours-unfused', 'ort-none'):>6} {ratio('ours-fused', 'ort-all'):>6} {ratio('ours-fused', 'torch-compile'):>6}"
      f" | load {l0}/{l1}")
d = ", ".join(f"{k} {v.get('before', float('nan')):.3f}/{v.get('after', float('nan')):.3f}" for k, v in drift.items())
if d:
    print(f"{'':<25}   peers before/after ours (median ms): {d}")
# this window for the summary: its ratios, and whether every peer's brackets agreed
ok = all("before" in v and "after" in v and abs(v["before"] - v["after"]) <= float(agree) * min(v["before"], v["after"])
         for v in drift.values()) and bool(drift)
R = {k: med[a] / med[c] for k, a, c in (("unfused/ort-none", "ours-unfused", "ort-none"), ("fused/ort-all", "ours-fused", "ort-all"),
                                        ("fused/torch-compile", "ours-fused", "torch-compile")) if a in med and c in med}
with open(wfile, "a") as f:
    f.write(json.dumps({"agree": ok, "ratios": R}) + "\n")
PY
    done
    if [ "$WINDOWS" -gt 1 ]; then
      "$ORT_PY" - "$tmp/windows.jsonl" "$name" "$b" "$AGREE" <<'PY'
import json, statistics, sys
wfile, name, b, agree = sys.argv[1:5]
W = [json.loads(l) for l in open(wfile) if l.strip()]
A = [w for w in W if w["agree"]]
keys = sorted({k for w in W for k in w["ratios"]})
cells = []
for k in keys:
    v = [w["ratios"][k] for w in A if k in w["ratios"]]
    cells.append(f"{k} " + (f"{statistics.median(v):.2f} (range {min(v):.2f}-{max(v):.2f})" if v else "-"))
print(f"{name:<22} {b:>2} | over {len(A)} of {len(W)} windows whose peer brackets agree within {float(agree):.0%}: " + "; ".join(cells))
PY
    fi
  done
done
echo "# columns: median ms (IQR) of ours-unfused, ours-fused, ort-none, ort-all, torch-eager, torch-compile | unfused/ORT-none, fused/ORT-all, fused/torch.compile | 1-minute load before/after the window"
[ -s "$tmp/peer.err" ] && { echo "# peer errors:"; sort -u "$tmp/peer.err" | tail -5 | sed 's/^/#   /'; }
exit 0
