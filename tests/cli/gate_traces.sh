#!/usr/bin/env bash
# tests/cli/gate_traces — the gate on two imported traces compares what traces hold (issue 37: it
# answered "PASS: 0 passed, 8 skipped", exit 0, whatever the traces): kernel time per kernel class
# and in all, kernels per step, launch overhead. Two generated Kineto traces of one workload (4
# profiler steps; gemm, add, mul, gelu kernels): the same trace passes with every trace check
# measured; a candidate whose elementwise kernels take twice as long fails on elementwise kernel
# time (exit 3); one with an extra kernel per step fails on kernels per step; a trace against a
# model run, and a trace without GPU kernels, are refused (exit 1) naming why.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
PY=${FA_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "gate_traces: FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc WANT WHAT CMD...
  local want=$1 what=$2; shift 2
  "$@" >out.txt 2>err.txt
  local rc=$?
  [ "$rc" = "$want" ] || { cat out.txt err.txt; fail "$what: exit $rc, expected $want"; }
}

# gen NAME EW_SCALE EXTRA_KERNELS: 4 steps of gemm(50) add(10) mul(10) gelu(10) us, elementwise
# durations times EW_SCALE, EXTRA_KERNELS more 3 us kernels per step; launch calls 4 us.
"$PY" - <<'EOF' || fail "could not write the traces"
import json
def gen(path, ew_scale, extra, gpu=True, lead=20):
    ev, corr = [], [100]
    def k(name, stream, ts, dur):
        c = corr[0]; corr[0] += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": ts - lead, "dur": 4, "args": {"correlation": c}})
        if gpu:
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                       "args": {"device": 0, "stream": stream, "correlation": c, "grid": [108, 1, 1],
                                "block": [256, 1, 1]}})
    for s in range(4):
        b = 1000 + 1000 * s
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": 1, "tid": 1,
                   "ts": b - 100, "dur": 900})
        k("gemm_kernel", 7, b, 50)
        k("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", 7, b + 55, 10 * ew_scale)
        k("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::MulFunctor<float>, at::detail::Array<char*, 3>)", 7, b + 150, 10 * ew_scale)
        k("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl<float>, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl<float>, at::detail::Array<char*, 2>)", 7, b + 250, 10 * ew_scale)
        for e in range(extra):
            k("gemm_kernel", 7, b + 400 + 10 * e, 3)
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42505273344,
           "computeMajor": 8, "computeMinor": 0, "numSms": 108}], "traceEvents": ev}
    json.dump(doc, open(path, "w"))
gen("base.json", 1, 0)
gen("slow_ew.json", 2, 0)
gen("more.json", 1, 1)
gen("nogpu.json", 1, 0, gpu=False)
gen("late.json", 1, 0, lead=8)  # every launch call ends after the kernel ahead: no kernel queued
EOF

for t in base slow_ew more nogpu; do
  "$CLI" import "$t.json" --db t.db >/dev/null 2>err.txt || { cat err.txt; fail "import $t.json"; }
done
# runs 1..4: base, slow_ew, more, nogpu
expect_rc 0 "the same trace twice" "$CLI" gate --db t.db --baseline 1 --candidate 1 --json
"$PY" - <<'EOF' || { cat out.txt; fail "the same trace: not every trace check measured and passed"; }
import json
d = json.load(open("out.txt"))
ids = {c["id"]: c["verdict"] for c in d["checks"]}
assert d["verdict"] == "pass", d["verdict"]
for want in ("trace.kernel_time", "trace.kernel_time:elementwise", "trace.kernel_time:gemm", "trace.kernels",
             "trace.launch_overhead"):
    assert ids.get(want) == "pass", (want, ids)
assert d["counts"]["skipped"] == 0, d["counts"]
EOF
expect_rc 3 "elementwise kernels twice as long" "$CLI" gate --db t.db --baseline 1 --candidate 2 --json
"$PY" - <<'EOF' || { cat out.txt; fail "slower elementwise kernels not caught"; }
import json
d = json.load(open("out.txt"))
ids = {c["id"]: c for c in d["checks"]}
assert ids["trace.kernel_time:elementwise"]["verdict"] == "fail", ids["trace.kernel_time:elementwise"]
assert abs(ids["trace.kernel_time:elementwise"]["stats"]["ratio"] - 2.0) < 1e-6
assert ids["trace.kernel_time:gemm"]["verdict"] == "pass"
assert ids["trace.kernels"]["verdict"] == "pass"
EOF
expect_rc 3 "one more kernel per step" "$CLI" gate --db t.db --baseline 1 --candidate 3 --markdown g.md
grep -Eq '^fail +kernels per step +\+[0-9.]+% +- +4\.0 -> 5\.0' out.txt || { cat out.txt; fail "kernels per step"; }
grep -q 'imported traces, one figure per side' g.md || { cat g.md; fail "gate.md does not state the traces' rule"; }
expect_rc 1 "a trace without GPU kernels" "$CLI" gate --db t.db --baseline 1 --candidate 4
grep -q "without GPU kernels: nothing to compare" err.txt || { cat err.txt; fail "no-GPU trace message"; }
"$CLI" run zoo:mlp-tiny --no-apply --iters 3 --db t.db >/dev/null 2>err.txt || { cat err.txt; fail "run mlp-tiny"; }
expect_rc 1 "a trace against a model run" "$CLI" gate --db t.db --baseline 1 --candidate 5
grep -q "the gate compares two model runs or two imported traces" err.txt || { cat err.txt; fail "mixed-kind message"; }
# The launch overhead per kernel is the median launch call + the median device launch latency
# (gaps before a kernel already queued). A run imported by an older version stored median launch
# call + median gap of any cause (host work included) as trace.launch_overhead_ns: never compared
# with the new figure, skipped with the reason, whichever side it is on.
"$CLI" import base.json --db t.db >/dev/null 2>err.txt || { cat err.txt; fail "import base.json again"; } # run 6
"$PY" - <<'EOF' || fail "could not make run 6's advice an older version's"
import json, sqlite3
c = sqlite3.connect("t.db")
(doc,) = c.execute("SELECT text FROM analysis_summary WHERE run_id=6 AND key='trace.advice_json'").fetchone()
a = json.loads(doc)
for k in ("launch_per_kernel_ns", "launch_latency_ns", "launch_latency_gaps", "host_bound_gaps", "host_bound_idle_ns",
          "host_bound_gap_median_ns", "unclassed_gaps", "unclassed_idle_ns"):
    del a[k]
a["gap_median_ns"], a["launch_overhead_ns"] = 96000, 100000
c.execute("UPDATE analysis_summary SET text=? WHERE run_id=6 AND key='trace.advice_json'", (json.dumps(a),))
c.execute("DELETE FROM analysis_summary WHERE run_id=6 AND key IN ('trace.launch_per_kernel_ns', 'trace.host_bound_idle_ns')")
c.execute("INSERT INTO analysis_summary(run_id, key, value, unit, text) VALUES (6, 'trace.launch_overhead_ns', 100000, 'ns', 'old')")
c.commit()
EOF
for pair in "6 1 baseline" "1 6 candidate"; do
  set -- $pair
  expect_rc 0 "an older run's launch figure ($3)" "$CLI" gate --db t.db --baseline "$1" --candidate "$2" --json
  "$PY" - "$3" <<'EOF' || { cat out.txt; fail "older run's launch overhead compared ($3)"; }
import json, sys
d = json.load(open("out.txt"))
c = {c["id"]: c for c in d["checks"]}["trace.launch_overhead"]
assert c["verdict"] == "skipped", c
assert "not comparable: the %s was imported by an older version" % sys.argv[1] in c["message"], c
EOF
done
"$CLI" advise 6 --db t.db >out.txt 2>err.txt || { cat err.txt; fail "advise the older run"; }
grep -q "launch overhead per kernel: not stored in this run (imported by an older version" out.txt || { cat out.txt; fail "older run's text"; }
# no kernel queued in the candidate: its figure lacks the latency part, so the two are not alike
"$CLI" import late.json --db t.db >/dev/null 2>err.txt || { cat err.txt; fail "import late.json"; } # run 7
expect_rc 0 "latency measured on one side" "$CLI" gate --db t.db --baseline 1 --candidate 7 --json
"$PY" - <<'EOF' || { cat out.txt; fail "latency on one side compared"; }
import json
d = json.load(open("out.txt"))
c = {c["id"]: c for c in d["checks"]}["trace.launch_overhead"]
assert c["verdict"] == "skipped" and "measured in the baseline only" in c["message"], c
EOF
echo "gate_traces: ok"
