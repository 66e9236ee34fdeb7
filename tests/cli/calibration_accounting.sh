#!/usr/bin/env bash
# tests/cli/calibration_accounting — bench/calibration.py's adjusted agreement columns (issue 36),
# on recorded figures: five accepted GEMM epilogues of a ViT-B/16 plan and their paired benchmark
# rounds (tests/data/calibration/vit_b_16_epilogues.json, from a calibration pass). Two benchmarks:
# `matmul+add` (cluster 39, predicted a 3 us loss, measured a 128 us saving whose paired rounds'
# IQR is 54 us: a real wrong sign) shared with cluster 40, and `matmul+add+add` (cluster 51,
# predicted a 3 us loss, measured a 94 us saving within its rounds' IQR of 143 us: about 0 on
# both sides) shared with 60 and 61. Raw, all five are wrong signs and misses; adjusted, the three
# `matmul+add+add` clusters are "about 0, within repeatability" (agreement), two wrong signs stay;
# per benchmark the five count as two, one of them a wrong sign. The raw columns stay printed.
set -uo pipefail

PY=${FA_PYTHON:-python3}
SRC=${FA_SOURCE_DIR:?FA_SOURCE_DIR not set (run through ctest)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "calibration_accounting: FAIL: $*" >&2; exit 1; }

# the recorded plan.json and the benchmarks table the plan was measured into
"$PY" - "$SRC/tests/data/calibration/vit_b_16_epilogues.json" <<'EOF' || fail "could not write the fixture"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
json.dump(d["plan"], open("plan.json", "w"))
db = sqlite3.connect("cal.db")
db.execute("CREATE TABLE benchmarks (run_id INTEGER, plan_id INTEGER, subject TEXT, cluster_id INTEGER, iter INTEGER, "
           "latency_ns INTEGER)")
db.executemany("INSERT INTO benchmarks VALUES (1, 1, ?, ?, ?, ?)", [(s, c, i, ns) for c, s, i, ns in d["benchmarks"]])
db.commit()
EOF
"$PY" "$SRC/bench/calibration.py" --db cal.db gpt2-vit/survey_vit_b_16=plan.json >out.txt 2>err.txt ||
  { cat out.txt err.txt; fail "calibration.py failed"; }

# the adjusted table's row for the family's epilogues, and the raw per-family row above it
adj=$(sed -n '/the same, adjusted/,/(about 0:/p' out.txt | grep -E '^ +gpt2-vit +epilogue ') || { cat out.txt; fail "no adjusted epilogue row"; }
raw=$(sed -n '/per family and cluster kind/,/the same, adjusted/p' out.txt | grep -E '^ +gpt2-vit +epilogue ') ||
  { cat out.txt; fail "no raw epilogue row"; }
echo "raw:      $raw"
echo "adjusted: $adj"
[[ $raw == *"0 / 5 (0%)"*"5 / 5 (100%)"* ]] || fail "raw counts changed: want 0 of 5 within, 5 of 5 wrong sign: $raw"
read -r -a f <<<"$adj"
# family kind about0 | within raw | within adjusted | wrong raw | wrong adjusted | benchmarks | within | wrong | IQR
[ "${f[2]}" = 3 ] || fail "about 0: want 3 (the matmul+add+add clusters), got ${f[2]}: $adj"
[[ $adj == *"0/5 (0%)"*"3/5 (60%)"*"5/5 (100%)"*"2/5 (40%)"* ]] ||
  fail "adjusted: want within 0/5 raw and 3/5 adjusted, wrong sign 5/5 raw and 2/5 adjusted: $adj"
[ "${f[11]}" = 2 ] || fail "benchmarks: want 2 (two signatures), got ${f[11]}: $adj"
[[ $adj == *" 2 "*"1/2 (50%)"*"1/2 (50%)"* ]] || fail "per benchmark: want 1 of 2 within (about 0), 1 of 2 wrong sign: $adj"
echo "calibration_accounting: ok"
