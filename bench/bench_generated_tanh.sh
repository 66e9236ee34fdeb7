#!/bin/bash
# bench/bench_generated_tanh.sh — a generated kernel's tanhf through SLEEF's u35 vector variant
# (codegen/codegen.c k_tanh_u35) against the u10 variant that libmvec's vector name resolves to,
# measured the way a user meets it: `fuse-advise run` on three elementwise chains with Tanh
# (built here with onnx from the oracles' python). The u10 side is the same build with the kernel
# compiler started through a wrapper that drops -DFA_SLEEF_GNUABI from its arguments, which is
# the only thing the u35 path rests on; the two sides keep separate kernel caches. ROUNDS rounds,
# the sides' order swapped every round, so both see the same machine. Per model and side it
# prints each round's verdict, the probe's fused and unfused sub-graph medians (the plan's basis)
# and the applier's medians (its reason), then the medians over the rounds; `uptime` before and
# after. Env: ROUNDS (3), ITERS (20), BUILD, PY (the python with onnx: BUILD/pyenv/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
CLI=$BUILD/fuse-advise
PY=${PY:-$BUILD/pyenv/bin/python3}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-20}
[ -x "$CLI" ] || { echo "bench_generated_tanh.sh: build $CLI first" >&2; exit 2; }
"$PY" -c "import onnx" 2>/dev/null || { echo "bench_generated_tanh.sh: $PY has no onnx (scripts/setup.sh makes it)" >&2; exit 2; }
command -v gcc >/dev/null || { echo "bench_generated_tanh.sh: the kernels' compiler here is not gcc" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/cc-u10" <<'EOF'
#!/bin/sh
# the kernel compiler without -DFA_SLEEF_GNUABI: tanhf's vector lanes go to libmvec's name (u10)
for a; do shift; [ "$a" = "-DFA_SLEEF_GNUABI" ] || set -- "$@" "$a"; done
exec gcc "$@"
EOF
chmod +x "$tmp/cc-u10"
"$PY" - "$tmp" <<'EOF'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
def model(path, shape, ops):
    nodes, inits, cur = [], [], "x"
    for i, op in enumerate(ops):
        out = f"t{i}"
        if op in ("Mul", "Add"):
            inits.append(nh.from_array(np.array(0.7 + 0.1 * i, dtype=np.float32), f"c{i}"))
            nodes.append(h.make_node(op, [cur, f"c{i}"], [out]))
        else:
            nodes.append(h.make_node(op, [cur], [out]))
        cur = out
    nodes.append(h.make_node("Identity", [cur], ["y"]))
    g = h.make_graph(nodes, "chain", [h.make_tensor_value_info("x", T.FLOAT, shape)],
                     [h.make_tensor_value_info("y", T.FLOAT, shape)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
d = sys.argv[1]
model(f"{d}/sig_tanh_relu_neg_16x64.onnx", [16, 64], ["Sigmoid", "Tanh", "Relu", "Neg"] * 2)
model(f"{d}/mul_tanh_add_tanh_mul_64x8192.onnx", [64, 8192], ["Mul", "Tanh", "Add", "Tanh", "Mul"])
model(f"{d}/tanh_mul_tanh_256x1024.onnx", [256, 1024], ["Tanh", "Mul", "Tanh"])
EOF
echo "# bench_generated_tanh: $(date -u '+%F %T') UTC, $(nproc) cores, iters $ITERS x rounds $ROUNDS, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in "$tmp"/*.onnx; do
  m=$(basename "$f" .onnx)
  : >"$tmp/$m.rows"
  for r in $(seq 1 "$ROUNDS"); do
    sides="u35 u10"; [ $((r % 2)) = 0 ] && sides="u10 u35"
    for s in $sides; do
      cc=gcc; [ "$s" = u10 ] && cc=$tmp/cc-u10
      out=$tmp/out-$m-$s-$r
      CC=$cc XDG_CACHE_HOME=$tmp/cache-$s "$CLI" run "$f" --iters "$ITERS" --db "$tmp/$s.db" --out "$out" \
        >"$out.log" 2>&1 || { echo "$m $s round $r: run failed"; tail -5 "$out.log"; continue; }
      "$PY" - "$out/plan.json" "$s" "$r" >>"$tmp/$m.rows" <<'EOF'
import json, re, sys
c = json.load(open(sys.argv[1]))["clusters"][0]
p = re.search(r"ran in (\d+) ns against its unfused sub-graph's (\d+) ns", c.get("basis") or "")
a = re.search(r"median ([\d.]+) -> ([\d.]+) us", c.get("reason") or "")
print(sys.argv[2], sys.argv[3], c["status"], p.group(1) if p else "-", p.group(2) if p else "-",
      a.group(2) if a else "-", a.group(1) if a else "-")
EOF
    done
  done
  echo "== $m"
  printf '  %-4s %5s %-20s %14s %14s %14s %14s\n' side round verdict "probe fused us" "probe unf. us" "applied fused" "applied unf."
  awk '{ pf = $4 == "-" ? "-" : sprintf("%.1f", $4 / 1e3); pu = $5 == "-" ? "-" : sprintf("%.1f", $5 / 1e3);
         printf "  %-4s %5s %-20s %14s %14s %14s %14s\n", $1, $2, $3, pf, pu, $6, $7 }' "$tmp/$m.rows"
  "$PY" - "$tmp/$m.rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for s in ("u35", "u10"):
    r = [x for x in rows if x[0] == s]
    pf = [float(x[3]) / 1e3 for x in r if x[3] != "-"]
    pu = [float(x[4]) / 1e3 for x in r if x[4] != "-"]
    acc = sum(1 for x in r if x[2] == "accepted")
    med = lambda v: f"{statistics.median(v):.1f}" if v else "-"
    print(f"  {s}: accepted in {acc} of {len(r)} rounds; probe medians over the rounds: fused {med(pf)} us, "
          f"unfused {med(pu)} us")
EOF
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
