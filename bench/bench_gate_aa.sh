#!/usr/bin/env bash
# bench/bench_gate_aa.sh — the CI gate's A/A false-alarm rate on real runs: PAIRS times, two
# identical `fuse-advise run MODEL --no-apply` runs back to back (same binary, model, seed and
# options; RUNS > 1: RUNS runs per side, alternating a b a b ..., gated with --runs RUNS), then
# `fuse-advise gate` on the pair. Nothing changed between the two runs, so every
# `fail` is a false alarm. Prints one line per pair (verdict, the checks that failed or were
# inconclusive, the end-to-end median ratio, the load) and the totals: fail / inconclusive / pass.
#
# env: BUILD (default build), MODEL (default the corpus light_squeezenet), PAIRS (20), RUNS (1 run
#      per side; 3 is what docs/ci.md recommends for CI), ITERS (20
#      timed iterations per run, the gate's default input), THREADS (2), GATE_ARGS (extra gate
#      options, e.g. "--runs 1 --max-regression 5%"), APPLY=1 to run the whole pipeline (adds the
#      fused checks; minutes per run).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
CORPUS=${FA_CORPUS:-$here/../shared/corpus}
MODEL=${MODEL:-$CORPUS/onnx/light/light_squeezenet.onnx}
PAIRS=${PAIRS:-20}
ITERS=${ITERS:-20}
THREADS=${THREADS:-2}
RUNS=${RUNS:-1}
[ -x "$FA" ] || { echo "bench_gate_aa: $FA not built" >&2; exit 1; }
[ -e "$MODEL" ] || [[ $MODEL == zoo:* ]] || { echo "bench_gate_aa: $MODEL not found (FA_CORPUS?)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
apply=--no-apply
[ -n "${APPLY:-}" ] && apply=
echo "# bench_gate_aa: $(date -u '+%F %T') UTC, $(nproc) cores, model $(basename "$MODEL"), $PAIRS pairs x 2 runs, $RUNS run(s) per side, iters $ITERS, threads $THREADS, ${apply:-with apply}, gate ${GATE_ARGS:-(defaults)}, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
fail=0 inc=0 pass=0
for i in $(seq 1 "$PAIRS"); do
  db="$tmp/aa-$i.db"
  load0=$(cut -d' ' -f1 /proc/loadavg)
  for side in $(for _ in $(seq 1 "$RUNS"); do echo a b; done); do
    # shellcheck disable=SC2086
    "$FA" run "$MODEL" $apply --iters "$ITERS" --threads "$THREADS" --db "$db" --out "$tmp/out-$i" --tag "aa-$side" \
      >/dev/null 2>"$tmp/err" || { echo "pair $i: run $side failed: $(tail -2 "$tmp/err")"; continue 2; }
  done
  load1=$(cut -d' ' -f1 /proc/loadavg)
  rc=0
  # shellcheck disable=SC2086
  "$FA" gate --db "$db" --tag aa-a --candidate-tag aa-b --runs "$RUNS" --json ${GATE_ARGS:-} >"$tmp/gate.json" 2>"$tmp/err" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "pair $i: gate error (exit $rc): $(tail -2 "$tmp/err")"; continue; }
  python3 - "$tmp/gate.json" "$i" "$load0" "$load1" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
bad = [c for c in g["checks"] if c["verdict"] in ("fail", "inconclusive")]
e2e = next((c for c in g["checks"] if c["id"] == "latency.e2e.unfused"), None)
r = e2e["stats"]["ratio"] if e2e and e2e.get("stats") else float("nan")
lo_hi = f'{e2e["stats"]["ci_lo"]:.3f}..{e2e["stats"]["ci_hi"]:.3f}' if e2e and e2e.get("stats") else "-"
what = ", ".join(f'{c["verdict"]}:{c["name"]}' for c in bad[:4]) + (f" (+{len(bad) - 4})" if len(bad) > 4 else "")
print(f'pair {sys.argv[2]:>2}: {g["verdict"]:<12} e2e ratio {r:.3f} CI {lo_hi:<13} load {sys.argv[3]}/{sys.argv[4]}  {what}')
PY
  v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$tmp/gate.json")
  case $v in fail) fail=$((fail + 1)) ;; inconclusive) inc=$((inc + 1)) ;; *) pass=$((pass + 1)) ;; esac
done
n=$((fail + inc + pass))
echo "A/A: $n pairs: fail $fail, inconclusive $inc, pass $pass; false-alarm rate $(python3 -c "print(f'{100 * $fail / max($n, 1):.1f}%')")"
