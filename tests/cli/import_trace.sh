#!/usr/bin/env bash
# import_trace — `fuse-advise import` as a user runs it: a hand-written Kineto trace (gemm then
# add -> mul -> gelu, four layers, plus five launch-bound tiny kernels) is stored as a run of
# kind 'import' with the file's SHA-256, device and counters, prints the repeated sequence and
# its figures, --json parses; no GPU activity -> exit 0 with the message and a stored run;
# MTIA -> exit 1 naming the reason; truncated -> exit 1 with the byte offset (0 with
# --keep-partial); orphans reported and stored; `report` renders the import run.
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
SRC=${FA_SOURCE_DIR:?FA_SOURCE_DIR must point at the source tree}
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { # expect_rc WANT DESCRIPTION CMD...
    local want=$1 what=$2; shift 2
    "$@" >out.txt 2>err.txt
    local rc=$?
    [ "$rc" = "$want" ] || { cat out.txt err.txt; fail "$what: exit $rc, expected $want"; }
}
DATA=$SRC/tests/data/import

# A Kineto trace: ts/dur in us. Stream 7: gemm(50) add(10) mul(10) gelu(10), 5 us apart, four
# layers 200 us apart; launch calls 4 us. Stream 8: five 2 us kernels 10 us apart, launch calls 8 us.
python3 - <<'EOF'
import json
ev = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10000}]
corr = [100]
def k(name, stream, ts, dur, ldur):
    c = corr[0]; corr[0] += 1
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
               "ts": ts - 20, "dur": ldur, "args": {"correlation": c}})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
               "args": {"device": 0, "stream": stream, "correlation": c, "grid": [108, 1, 1], "block": [256, 1, 1],
                        "registers per thread": 64, "shared memory": 0}})
for i in range(4):
    b = 1000 + 200 * i
    k("gemm_kernel", 7, b, 50, 4)
    k("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", 7, b + 55, 10, 4)
    k("mul_kernel", 7, b + 70, 10, 4)
    k("gelu_kernel", 7, b + 85, 10, 4)
for i in range(5):
    k("tiny_kernel", 8, 5000 + 10 * i, 2, 8)
doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42505273344,
       "computeMajor": 8, "computeMinor": 0, "numSms": 108, "maxThreadsPerMultiprocessor": 2048,
       "regsPerMultiprocessor": 65536, "sharedMemPerMultiprocessor": 167936, "warpSize": 32}],
       "traceEvents": ev}
json.dump(doc, open("hand.json", "w"))
EOF

expect_rc 0 "import hand.json" "$CLI" import hand.json --db t.db
grep -q "kernels: vectorized_elementwise_kernel<add> -> mul_kernel -> gelu_kernel" out.txt || { cat out.txt; fail "repeated add -> mul -> gelu not named"; }
grep -q "repeated sequence x4: saves 112.0 us" out.txt || { cat out.txt; fail "sequence count/saving"; }
grep -q "measured 120.0 us kernels + 32.0 us launch cost; fused 40.0 us" out.txt || { cat out.txt; fail "sequence figures"; }
grep -q "from: bytes unknown" out.txt || { cat out.txt; fail "estimate basis label"; }
# each launch call ends 16 us (12 us on stream 8) before its kernel: inside a layer and between the
# tiny kernels the next kernel was already queued (gaps 12 x 5, 4 x 8 us: latency 5 us); before the
# next layer's gemm (3 x 105 us) the GPU waited for the host
grep -q "launch overhead per kernel, measured: 9.00 us = median launch call 4.00 us (21 calls) + median device launch latency 5.00 us (16 gaps before a kernel already queued)" out.txt ||
    { cat out.txt; fail "launch overhead figures"; }
grep -q "host-bound idle (not launch overhead): 315.0 us in 3 gaps (median 105.0 us) where the GPU waited for the host" out.txt ||
    { cat out.txt; fail "host-bound idle figures"; }
grep -q "launch-bound stretches (>= 3 kernels each shorter than its launch call): 1, 5 kernels, 10.0 us" out.txt ||
    { cat out.txt; fail "launch-bound stretch"; }
grep -q "stored in t.db as run 1 (kind import)" out.txt || { cat out.txt; fail "stored run line"; }
SHA=$(sha256sum hand.json | cut -d' ' -f1)
python3 - "$SHA" <<'EOF' || fail "runs row of the import"
import sqlite3, sys
c = sqlite3.connect("t.db")
r = c.execute("SELECT kind, model_path, source_sha256, device_name, trace_source, n_orphans, n_kernels, status FROM runs WHERE id=1").fetchone()
assert r[0] == "import" and r[1] == "hand.json" and r[2] == sys.argv[1], r
assert r[3] == "NVIDIA A100-SXM4-40GB" and r[4] == "kineto" and r[5] == 0 and r[7] == "ok", r
m = c.execute("SELECT members_json, launches FROM analysis_chains WHERE run_id=1").fetchall()
assert len(m) == 1 and m[0][1] == 12 and m[0][0].endswith('"mul_kernel","gelu_kernel"]'), m
keys = {k for (k,) in c.execute("SELECT key FROM analysis_summary WHERE run_id=1")}
for k in ("trace.kernels", "trace.opportunities", "trace.launch_per_kernel_ns", "trace.host_bound_idle_ns", "trace.idle_ns", "trace.orphans", "trace.device.cc", "trace.advice_json"):
    assert k in keys, (k, keys)
EOF

expect_rc 0 "import --json" "$CLI" import hand.json --db t.db --json
python3 - <<'EOF' || fail "--json document"
import json
d = json.load(open("out.txt"))
assert d["run_id"] == 2 and d["import"]["kernels"] == 21, d["import"]
a = d["advice"]
assert a["arch"] == "sm_80" and a["hbm_gbs"] == 1555.0 and a["launch_per_kernel_ns"] == 9000, a
assert a["arch_source"] == "deviceProperties", a["arch_source"]
assert a["launch_latency_ns"] == 5000 and a["host_bound_idle_ns"] == 315000 and "launch_overhead_ns" not in a, a
s = a["opportunities"]
assert len(s) == 1 and s[0]["count"] == 4 and s[0]["bytes"] == "unknown" and s[0]["saving_ns"] == 112000, s
assert s[0]["saving"] == "estimated" and s[0]["pattern"] is None and "slowest member" in s[0]["basis"], s
assert s[0]["kernels"][1:] == ["mul_kernel", "gelu_kernel"], s
assert a["launch_bound_kernels"] == 5 and a["idle_ns"] == (12 * 5 + 3 * 105 + 4 * 8) * 1000, a
EOF

expect_rc 0 "report of the import run" "$CLI" report 1 --db t.db --out rep
grep -q "<section id=\"opportunities\">" rep/report.html && grep -q "repeated sequence" rep/report.html || fail "report.html lacks the trace advice"
# the report shows the one stored launch figure, with its parts, as the text does
grep -q "Launch overhead per kernel, measured: <b>9.00 µs</b> = median launch call 4.0 µs" rep/report.html &&
    grep -q "median device launch latency 5.0 µs" rep/report.html || fail "report.html launch overhead"

# A host-bound trace (each kernel launched 1 ms after the one before it ended, as in pipit's nsys
# saxpy export): no kernel queued, so the latency part is not measured and said so on every
# surface; the waits are host-bound idle, never launch overhead (they made it 985 us per kernel).
python3 - <<'EOF2'
import json
ev, c = [], 500
for i in range(6):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 100 + 1000 * i,
               "dur": 5, "args": {"correlation": c + i}})
    ev.append({"ph": "X", "cat": "kernel", "name": "saxpy_kernel", "pid": 0, "tid": 7, "ts": 108 + 1000 * i, "dur": 20,
               "args": {"device": 0, "stream": 7, "correlation": c + i}})
json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8,
           "computeMinor": 0}], "traceEvents": ev}, open("hostbound.json", "w"))
EOF2
expect_rc 0 "import a host-bound trace" "$CLI" import hostbound.json --db hb.db --json
python3 - <<'EOF2' || { cat out.txt; fail "host-bound trace: launch figures"; }
import json, sqlite3
a = json.load(open("out.txt"))["advice"]
assert a["launch_per_kernel_ns"] == 5000 and a["launch_latency_ns"] == -1, a
assert a["host_bound_gaps"] == 5 and a["host_bound_idle_ns"] == 5 * 980000 and a["host_bound_gap_median_ns"] == 980000, a
rows = dict(sqlite3.connect("hb.db").execute("SELECT key, value FROM analysis_summary WHERE run_id=1"))
assert rows["trace.launch_per_kernel_ns"] == 5000 and rows["trace.host_bound_idle_ns"] == 5 * 980000, rows
EOF2
expect_rc 0 "advise the host-bound run" "$CLI" advise 1 --db hb.db
grep -q "launch overhead per kernel, measured: 5.00 us = median launch call 5.00 us (6 calls) + device launch latency not measured" out.txt &&
    grep -q "host-bound idle (not launch overhead): 4.90 ms in 5 gaps (median 980.0 us)" out.txt || { cat out.txt; fail "host-bound text"; }
expect_rc 0 "report of the host-bound run" "$CLI" report 1 --db hb.db --out hbrep
grep -q "device launch latency not measured" hbrep/report.html && grep -q "Host-bound idle" hbrep/report.html ||
    fail "report.html: host-bound trace"

expect_rc 0 "no GPU activity" "$CLI" import "$DATA/cpu_only.json" --db t.db
grep -q "no GPU activity in $DATA/cpu_only.json: nothing to fuse" out.txt || { cat out.txt; fail "no-GPU message"; }
grep -q "as run 3 (kind import)" out.txt || { cat out.txt; fail "no-GPU run not stored"; }

expect_rc 1 "MTIA trace" "$CLI" import "$DATA/mtia.json" --db t.db
grep -q "non-CUDA accelerator trace" err.txt || { cat err.txt; fail "MTIA reason"; }

expect_rc 1 "truncated trace" "$CLI" import "$DATA/truncated.json" --db t.db
grep -q "truncated.json: .*at byte [0-9]" err.txt || { cat err.txt; fail "truncated: file + byte offset"; }
expect_rc 0 "truncated --keep-partial" "$CLI" import "$DATA/truncated.json" --db t.db --keep-partial
grep -q "truncated at byte" out.txt || { cat out.txt; fail "--keep-partial note"; }

expect_rc 0 "orphans" "$CLI" import "$DATA/orphans_skew.json" --db t.db
N=$(sed -n 's/^orphans \([0-9]*\), clock inversions \([0-9]*\).*/\1 \2/p' out.txt)
[ -n "$N" ] && [ "${N% *}" -gt 0 ] && [ "${N#* }" -gt 0 ] || { cat out.txt; fail "orphans/inversions not reported"; }
python3 - ${N% *} ${N#* } <<'EOF' || fail "orphan counters not stored"
import sqlite3, sys
r = sqlite3.connect("t.db").execute("SELECT n_orphans, n_clock_inversions FROM runs ORDER BY id DESC LIMIT 1").fetchone()
assert r == (int(sys.argv[1]), int(sys.argv[2])), r
EOF

# Issue 15: a trace read from a pipe — /dev/stdin, bash process substitution, `cat | run` — is
# imported whole (the kind detection used to eat its first bytes), stored with the SHA-256 of
# what was read, and named by the path given.
gzip -c hand.json > hand.json.gz
expect_rc 0 "import /dev/stdin" bash -c "'$CLI' import /dev/stdin --db pipe.db < hand.json.gz"
grep -q "add> -> mul_kernel -> gelu_kernel" out.txt || { cat out.txt; fail "stdin import: sequence missing"; }
# `advise latest` on a database holding only imported runs: the stored advice, whole
expect_rc 0 "advise latest" "$CLI" advise latest --db pipe.db
grep -q "repeated sequence x4: saves 112.0 us" out.txt || { cat out.txt; fail "advise latest on an imported run"; }
expect_rc 0 "import <(zcat ...)" bash -c "'$CLI' import <(zcat hand.json.gz) --db pipe.db"
grep -q "imported /dev/fd/[0-9]*" out.txt || { cat out.txt; fail "process substitution not named"; }
expect_rc 0 "cat | run /dev/stdin" bash -c "cat hand.json | '$CLI' run /dev/stdin --db pipe.db --out piperep"
[ -s piperep/report.html ] || fail "run from a pipe wrote no report"
python3 - "$SHA" "$(sha256sum hand.json.gz | cut -d' ' -f1)" <<'EOF2' || fail "pipe runs not stored whole"
import sqlite3, sys
rows = sqlite3.connect("pipe.db").execute("SELECT model_path, source_sha256, n_kernels FROM runs ORDER BY id").fetchall()
n = sqlite3.connect("t.db").execute("SELECT n_kernels FROM runs WHERE id=1").fetchone()[0]
assert len(rows) == 3, rows
assert rows[0][0] == "/dev/stdin" and rows[0][1] == sys.argv[2] and rows[0][2] == n, rows
assert rows[1][1] == sys.argv[1] and rows[1][2] == n, rows
assert rows[2][1] == sys.argv[1] and rows[2][2] == n, rows
EOF2
expect_rc 1 "a pipe that is not a trace" bash -c "echo hello | '$CLI' import /dev/stdin --db pipe.db"
grep -q "/dev/stdin: not a recognised trace" err.txt || { cat err.txt; fail "non-trace pipe message"; }

# Issue 37: a trace's default output folder is named after the file without its format's
# suffix (fuse-advise-out/hand, not fuse-advise-out/hand.json.gz)
expect_rc 0 "run TRACE.json.gz, default out" "$CLI" run hand.json.gz --db named.db
[ -s fuse-advise-out/hand/report.html ] && [ ! -e fuse-advise-out/hand.json.gz ] ||
    { ls fuse-advise-out; fail "default output folder of hand.json.gz"; }

# an Nsight Systems export names its own record as the compute capability's source
python3 - <<'EOF2' || fail "make nsys.sqlite"
import sqlite3
c = sqlite3.connect("nsys.sqlite")
c.executescript("""
CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION','3.13.2');
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES(1,'cudaLaunchKernel'),(2,'add'),(6,'void add<float>(float*)');
CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT, smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER,
  totalMemory INTEGER, maxWarpsPerSm INTEGER, threadsPerWarp INTEGER);
INSERT INTO TARGET_INFO_GPU VALUES(0,'NVIDIA Test GPU',108,8,6,85899345920,64,32);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER, shortName INTEGER, registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
  blockX INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER,
  localMemoryPerThread INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(1000,2000,0,1,0,7,5,1,6,2,32,10,1,1,256,1,1,0,0,0);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(900,950,0,1,5,1,0,0);
""")
c.commit()
EOF2
expect_rc 0 "import nsys --json" "$CLI" import nsys.sqlite --db nsys.db --json
python3 - <<'EOF2' || fail "nsys arch_source"
import json
a = json.load(open("out.txt"))["advice"]
assert a["arch"] == "sm_86" and a["arch_source"] == "TARGET_INFO_GPU", (a["arch"], a["arch_source"])
EOF2

# an input inside the output folder is never swapped out with the old outputs: a trace saved as
# prof/trace.json, a model as m/model.folded.onnx (both names of outputs)
mkdir -p prof m
cp hand.json prof/trace.json && [ -s prof/trace.json ] || fail "copy hand.json"
sum=$(sha256sum prof/trace.json)
expect_rc 2 "run prof/trace.json --out prof" "$CLI" run prof/trace.json --db inside.db --out prof
grep -q "holds the input prof/trace.json" err.txt || { cat err.txt; fail "input inside --out not named"; }
[ "$(sha256sum prof/trace.json)" = "$sum" ] || fail "the trace inside --out was replaced"
expect_rc 0 "zoo model into m/" "$CLI" zoo mlp-tiny -o m/model.folded.onnx
sum=$(sha256sum m/model.folded.onnx)
expect_rc 2 "run m/model.folded.onnx --out m" "$CLI" run m/model.folded.onnx --iters 2 --threads 1 --db inside.db --out m
grep -q "holds the input m/model.folded.onnx" err.txt || { cat err.txt; fail "model inside --out not named"; }
[ "$(sha256sum m/model.folded.onnx)" = "$sum" ] || fail "the model inside --out was replaced"

expect_rc 2 "no TRACE" "$CLI" import --db t.db
expect_rc 1 "missing file" "$CLI" import does-not-exist.json --db t.db
grep -q "does-not-exist.json" err.txt || { cat err.txt; fail "missing file not named"; }
echo "import_trace: all checks passed"
