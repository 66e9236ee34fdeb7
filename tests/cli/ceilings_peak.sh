#!/usr/bin/env bash
# tests/cli/ceilings_peak — the roofline checked on its own terms (issue 37: an FP32 peak cached
# from a busy moment put convolutions at 99-170% of the roof, with no warning): when a measured
# op runs above the stored FP32 peak, `apply`'s stdout and report.html warn with the op, its
# share of the peak and the re-measure command, summary.json counts the ops
# (ceilings.above_peak); the report shows when the peak was measured; with a peak no op reaches,
# no warning; a measured cache level's roof is drawn on the roofline. The peak is set in the run database (the cached ceilings) to make both cases.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
PY=${FA_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "ceilings_peak: FAIL: $*" >&2; exit 1; }
export FA_TRACE_SPAN_S=0

"$CLI" run zoo:mlp-tiny --iters 3 --max-clusters 1 --db p.db --out o1 >out1.txt 2>err.txt || { cat out1.txt err.txt; fail "run"; }
setpeak() {
  "$PY" - "$1" <<'EOF' || fail "could not set the stored peak"
import sqlite3, sys
db = sqlite3.connect("p.db")
n = db.execute("UPDATE device_ceilings SET value = ? WHERE name = 'fp32_peak'", (float(sys.argv[1]),)).rowcount
db.commit()
assert n >= 1, "no fp32_peak row"
EOF
}
setpeak 0.001 # GFLOP/s: every op with FLOPs is above it
"$CLI" apply 1 --iters 3 --max-clusters 1 --db p.db --out o2 >out2.txt 2>err.txt || { cat out2.txt err.txt; fail "apply"; }
w=$(grep -E '^warning: [0-9]+ ops? ran above the stored FP32 peak \(.* at [0-9]+% of it.*fuse-advise devices --measure$' out2.txt) ||
  { cat out2.txt; fail "no above-peak warning on stdout"; }
n=$(sed -E 's/^warning: ([0-9]+) .*/\1/' <<<"$w")
"$PY" - "$n" <<'EOF' || fail "summary.json's above_peak differs from stdout"
import json, sys
c = json.load(open("o2/summary.json"))["ceilings"]
assert c["above_peak"] and c["above_peak"]["ops"] == int(sys.argv[1]), c
assert c["above_peak"]["max_ratio"] > 1
assert isinstance(c["peak_measured_at_ns"], int) and c["peak_measured_at_ns"] > 0, c
# the load when they were measured (this run measured them into a fresh database)
assert isinstance(c["load_at_measurement"], (int, float)) and c["load_at_measurement"] >= 0, c
EOF
grep -q 'FP32 peak</th><td>.*; measured .* at a load of [0-9.]* (1-minute average)' o2/report.html ||
  fail "report.html does not show the load at which the peak was measured"
grep -q '<th>warning</th><td class="bad">[0-9]* ops\? ran above this FP32 peak' o2/report.html || fail "no warning in report.html"
grep -Eq 'FP32 peak</th><td>[^<]*; measured [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]+ UTC' o2/report.html || fail "the peak's age not shown"

setpeak 1e9
# a measured cache level (as roofline/ceilings.c stores one): its roof is drawn, dashed, and named
"$PY" - <<'EOF' || fail "could not store a cache level"
import sqlite3
db = sqlite3.connect("p.db")
key = db.execute("SELECT device_key FROM device_ceilings WHERE name = 'fp32_peak'").fetchone()[0]
db.execute("DELETE FROM device_ceilings WHERE device_key = ? AND name LIKE 'cache_%'", (key,))
db.execute("INSERT INTO device_ceilings VALUES (?, 'cache_1', 'bandwidth', 1000.0, 'GB/s', 'measured', 1, '32768')", (key,))
db.commit()
EOF
"$CLI" report 1 --db p.db -o o3 >/dev/null 2>err.txt || { cat err.txt; fail "report"; }
grep -q 'stroke-dasharray="5,4" points="[0-9., ]*"><title>[A-Za-z0-9]* roof 1000.0 GB/s (measured read bandwidth at a 32.0 KiB working set)' \
  o3/report.html || fail "the cache level's roof is not drawn"
grep -q 'ran above this FP32 peak' o3/report.html && fail "a warning with a peak no op reaches"
"$PY" -c 'import json; assert json.load(open("o3/summary.json"))["ceilings"]["above_peak"] is None' || fail "above_peak not null"
echo "ceilings_peak: ok"
