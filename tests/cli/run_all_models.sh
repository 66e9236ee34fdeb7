#!/usr/bin/env bash
# The full job on every corpus light model and every zoo model, at a reduced iteration count:
# each run stores kernel records = live nodes x timed iterations (issue 3), ends with a verified
# plan (no cluster rejected by verification or a build error) and a speedup table (issue 6),
# and writes every report (issue 7).
set -uo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
models=(zoo:mlp-tiny zoo:convnet-tiny zoo:bert-layer zoo:gpt2-block zoo:mobilenetv2 zoo:resnet50)
if [ -d "$FA_CORPUS" ]; then
  for m in "$FA_CORPUS"/onnx/light/*.onnx; do models+=("$m"); done
else
  echo "note: corpus not found, light models not run"
fi
ITERS=3
pass=0; fail=0
for m in "${models[@]}"; do
  name=$(basename "${m#zoo:}" .onnx)
  out="$tmp/out-$name"
  log=$("$FA_CLI" run "$m" --iters $ITERS --warmup 1 --db "$tmp/fa.db" --out "$out" 2>&1); rc=$?
  why=""
  [ $rc -eq 0 ] || why="exit $rc"
  [ -z "$why" ] && ! grep -q "speedup" <<<"$log" && why="no speedup line"
  for f in report.html graph.svg graph.dot trace.json plan.json summary.json kernels.csv; do
    [ -z "$why" ] && [ ! -s "$out/$f" ] && why="missing $f"
  done
  if [ -z "$why" ]; then
    why=$(python3 - "$tmp/fa.db" "$out/plan.json" "$out/summary.json" "$ITERS" <<'PY'
import json, sqlite3, sys
db, plan, summ, iters = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
p = json.load(open(plan)); s = json.load(open(summ))
bad = [c for c in p["clusters"] if c["status"] in ("rejected-verify", "rejected-error")]
if bad:
    print(f"cluster {bad[0]['id']} {bad[0]['label']}: {bad[0]['status']}: {bad[0]['reason']}"); sys.exit()
if not s.get("speedup"):
    print("summary.json has no speedup"); sys.exit()
con = sqlite3.connect(db)
rid = p["run_id"]
live = con.execute("select count(*) from nodes where run_id=? and folded=0", (rid,)).fetchone()[0]
recs = con.execute("select count(*) from kernels where run_id=? and kind=0 and iter>=0", (rid,)).fetchone()[0]
if recs != live * iters:
    print(f"{recs} kernel records, expected {live} live nodes x {iters} iterations"); sys.exit()
PY
)
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1)); echo "ok   $name: $(grep -E '^End to end: ' <<<"$log")"
  else
    fail=$((fail + 1)); echo "FAIL $name: $why"; tail -5 <<<"$log"
  fi
done
echo "run_all_models: $pass passed, $fail failed"
[ $fail -eq 0 ]
