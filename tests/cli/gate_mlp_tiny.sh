#!/usr/bin/env bash
# gate_mlp_tiny — `fuse-advise gate` on real stored runs of zoo:mlp-tiny: A/A (an exact SQL
# copy of a run) is never a regression; one kernel's records scaled by 2 fail naming it; a lost fusion
# fails naming its reason (when this build's pipeline accepts a cluster); exit codes 0/1/2/3;
# --strict; two databases; JUnit XML well-formed with the testsuite/testcase/failure
# structure; Markdown table well-formed; JSON parses.
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
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

# copy_run DB SRC TAG [NODE SCALE]: duplicate run SRC (every per-run table) as a new run with
# TAG; optionally scale the kernel records of NODE by SCALE. Prints the new run id.
copy_run() {
    python3 - "$@" <<'EOF'
import sqlite3, sys
db, src, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
node = sys.argv[4] if len(sys.argv) > 4 else None
scale = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
c = sqlite3.connect(db)
cols = [r[1] for r in c.execute("PRAGMA table_info(runs)")]
new = c.execute("SELECT max(id)+1 FROM runs").fetchone()[0]
sel = ",".join("?" if k in ("id", "tag") else k for k in cols)
c.execute(f"INSERT INTO runs({','.join(cols)}) SELECT {sel} FROM runs WHERE id=?", (*[v for k in cols for v in ([new] if k == "id" else [tag] if k == "tag" else [])], src))
tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")]
for t in tables:
    tc = [r[1] for r in c.execute(f"PRAGMA table_info({t})")]
    if t == "runs" or "run_id" not in tc:
        continue
    s2 = ",".join("?" if k == "run_id" else k for k in tc)
    c.execute(f"INSERT INTO {t}({','.join(tc)}) SELECT {s2} FROM {t} WHERE run_id=?", (new, src))
if node:
    n = c.execute("UPDATE kernels SET end_ns = start_ns + CAST(round((end_ns - start_ns) * ?) AS INTEGER) "
                  "WHERE run_id=? AND kind=0 AND node_name=?", (scale, new, node)).rowcount
    assert n > 0, f"no kernel records of {node}"
c.commit()
print(new)
EOF
}

check_outputs() { # check_outputs JUNIT MARKDOWN JSON EXPECTED_VERDICT
    python3 - "$@" <<'EOF' || fail "output validation"
import json, sys, xml.etree.ElementTree as ET
junit, md, js, verdict = sys.argv[1:5]
root = ET.parse(junit).getroot()          # well-formed or raises
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1, "one testsuite"
s = suites[0]
cases = s.findall("testcase")
assert int(s.get("tests")) == len(cases) > 0, "tests attribute counts the testcases"
nf = sum(1 for tc in cases if tc.find("failure") is not None)
ns = sum(1 for tc in cases if tc.find("skipped") is not None)
assert int(s.get("failures")) == nf and int(s.get("skipped")) == ns, "failure/skipped counts"
for tc in cases:
    assert tc.get("name") and tc.get("classname", "").startswith("fuse-advise.gate."), tc.attrib
    assert len([e for e in tc if e.tag in ("failure", "skipped", "error")]) <= 1
    f = tc.find("failure")
    if f is not None:
        assert f.get("message") and f.get("type") in ("regression", "inconclusive")
allowed = {"properties", "testcase", "system-out", "system-err"}
assert all(e.tag in allowed for e in s), [e.tag for e in s]
# Markdown: a header row, a delimiter row, then rows with the same number of cells
rows = [l for l in open(md, encoding="utf-8").read().splitlines() if l.startswith("|")]
def cells(l):
    out, cur, i = [], "", 0
    while i < len(l):
        if l[i] == "\\" and i + 1 < len(l): cur += l[i:i+2]; i += 2; continue
        if l[i] == "|": out.append(cur); cur = ""
        else: cur += l[i]
        i += 1
    return out
assert len(rows) >= 3, "table present"
n = len(cells(rows[0]))
assert all(len(cells(r)) == n for r in rows), "every row has the header's cell count"
assert set(rows[1].replace("|", "").replace("-", "").replace(":", "").strip()) == set(), "delimiter row"
heads = [i for i, r in enumerate(rows) if set(r.replace("|", "").replace("-", "").replace(":", "").strip()) == set()]
assert all(i >= 1 for i in heads) and len(heads) in (1, 2), "one or two tables (failing first, passing collapsed)"
assert len(rows) - 2 * len(heads) == len(cases), "one table row per check"
doc = json.load(open(js))
assert doc["schema"] == "fuse-advise.gate/1" and doc["verdict"] == verdict, doc["verdict"]
assert len(doc["checks"]) == len(cases)
EOF
}

# --- one real run; its exact copy is the A/A candidate (no machine drift between them)
$CLI run zoo:mlp-tiny --no-apply --iters 1000 --tag main --db a.db >run.txt 2>&1 || { cat run.txt; fail "run"; }
AA=$(copy_run a.db 1 pr) || fail "copy run"
expect_rc 0 "A/A exact copy" $CLI gate --db a.db --tag main --junit aa.xml --markdown aa.md
grep -q "candidate: run $AA " out.txt || { cat out.txt; fail "--tag main picked run $AA as candidate"; }
# An exact copy must never be called a regression (a false alarm). On a quiet machine it passes;
# under heavy load (CI runs tests two at a time beside other jobs) the per-iteration spread can be
# so wide that even 1000 iterations leave the interval straddling +3%: INCONCLUSIVE is then the
# honest verdict and still exits 0. The decisiveness of the rule is tested on synthetic samples
# in test_gate_stats; here only "no check fails" and "the verdict is not a regression" are asserted.
grep -Eq "^(PASS|INCONCLUSIVE)" out.txt || { cat out.txt; fail "A/A verdict"; }
! grep -q "^fail " out.txt || { cat out.txt; fail "A/A: a check failed on an exact copy"; }
AAV=$(grep -Eo "^(PASS|INCONCLUSIVE)" out.txt | head -1 | tr 'A-Z' 'a-z')
$CLI gate --db a.db --tag main --json >aa.json || fail "--json"
check_outputs aa.xml aa.md aa.json "$AAV"

# --- the op with the largest total, twice as slow in a copy. This check is about the gate
#     detecting and naming the slowed kernel and its exit code and outputs; the rule's power at
#     small slowdowns is measured on synthetic samples (test_gate_stats, bench/gate_false_alarm.c).
#     On real records of sub-microsecond ops the per-op spread is the machine's: under CI's load
#     (tests two at a time beside other jobs) one op's 99% interval of a 25% slowdown once spanned
#     -7%..+68% over 1000 iterations (bootstrap medians jumping between two modes of the timing
#     distribution), so "inconclusive" was the honest answer and a 25% injection made the test
#     flaky. A doubled kernel is decided unless the op's median moves by more than 1.9x between
#     resamples. --min-share 0 keeps the check independent of the op's share of the iteration
#     (about 10% on mlp-tiny; the share rule has its own unit tests).
OP=$(python3 -c "
import sqlite3; c=sqlite3.connect('a.db')
print(c.execute('''SELECT node_name FROM kernels WHERE run_id=1 AND kind=0 AND iter>=0 GROUP BY node_name
                   ORDER BY sum(end_ns-start_ns) DESC LIMIT 1''').fetchone()[0])")
SLOW=$(copy_run a.db 1 slow "$OP" 2.0) || fail "copy run"
expect_rc 3 "one kernel twice as slow" $CLI gate --db a.db --baseline 1 --candidate "$SLOW" --min-share 0 --junit slow.xml \
    --markdown slow.md
grep -E "^fail .*'$OP'" out.txt >/dev/null || grep -E "^fail .*[(, ]$OP[,)]" out.txt >/dev/null ||
    { cat out.txt; fail "the failing check names $OP or its cluster"; }
grep -q "^REGRESSION" out.txt || fail "overall verdict"
$CLI gate --db a.db --baseline 1 --candidate "$SLOW" --min-share 0 --json >slow.json
check_outputs slow.xml slow.md slow.json fail
grep -q '<failure type="regression"' slow.xml || fail "JUnit failure element"

# --- two databases: the same comparison across files
cp a.db b.db
expect_rc 3 "two databases" $CLI gate --baseline-db a.db --candidate-db b.db --baseline 1 --candidate "$SLOW" --min-share 0
expect_rc 0 "two databases, A/A" $CLI gate --baseline-db a.db --candidate-db b.db --baseline 1 --candidate "$AA"

# --- errors and usage
$CLI run zoo:convnet-tiny --no-apply --iters 3 --db a.db >/dev/null 2>&1 || fail "run convnet-tiny"
OTHER=$(python3 -c "import sqlite3; print(sqlite3.connect('a.db').execute('SELECT max(id) FROM runs').fetchone()[0])")
expect_rc 1 "different models" $CLI gate --db a.db --baseline 1 --candidate "$OTHER"
grep -q "different models" err.txt || { cat err.txt; fail "message names the cause"; }
expect_rc 1 "missing database" $CLI gate --db nothere.db
expect_rc 1 "missing run" $CLI gate --db a.db --baseline 1 --candidate 999
expect_rc 1 "unknown tag" $CLI gate --db a.db --tag nosuchtag
expect_rc 2 "unknown option" $CLI gate --bogus
expect_rc 2 "bad threshold" $CLI gate --max-regression abc
expect_rc 2 "--candidate-tag without --tag" $CLI gate --candidate-tag x
expect_rc 1 "unwritable junit" $CLI gate --db a.db --tag main --junit no/such/dir/out.xml
[ ! -e no ] || fail "nothing half-written"

# --- too few iterations: inconclusive passes, --strict fails
$CLI run zoo:mlp-tiny --no-apply --iters 3 --tag few --db c.db >/dev/null 2>&1 || fail "run"
$CLI run zoo:mlp-tiny --no-apply --iters 3 --db c.db >/dev/null 2>&1 || fail "run"
expect_rc 0 "inconclusive without --strict" $CLI gate --db c.db --tag few
grep -q "^INCONCLUSIVE" out.txt || { cat out.txt; fail "inconclusive verdict"; }
grep -q -- "--iters" out.txt || fail "suggests an iteration count"
expect_rc 3 "inconclusive with --strict" $CLI gate --db c.db --tag few --strict

# --- several runs per side (--runs): pooled, and the selection is reported
for k in 1 2; do
    $CLI run zoo:mlp-tiny --no-apply --iters 20 --tag r-main --db e.db >/dev/null 2>&1 || fail "run"
    $CLI run zoo:mlp-tiny --no-apply --iters 20 --tag r-pr --db e.db >/dev/null 2>&1 || fail "run"
done
$CLI gate --db e.db --tag r-main --candidate-tag r-pr --runs 2 --json >multi.json; rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "--runs 2: exit $rc"
python3 -c "
import json; d=json.load(open('multi.json'))
assert d['baseline']['runs'] == [3, 1] and d['candidate']['runs'] == [4, 2], (d['baseline']['runs'], d['candidate']['runs'])
e=[c for c in d['checks'] if c['id']=='latency.e2e.unfused'][0]['stats']
assert e['runs_base'] == 2 and e['runs_cand'] == 2 and e['n_base'] == 40, e" || fail "--runs pooling"
expect_rc 0 "explicit run lists" $CLI gate --db e.db --baseline 1,3 --candidate 1,3
expect_rc 2 "--runs without tags" $CLI gate --db c.db --runs 2

# --- a lost fusion (only when this build's pipeline accepts a cluster on mlp-tiny)
if $CLI run zoo:mlp-tiny --iters 20 --tag full --db d.db >full.txt 2>&1; then
    ACC=$(python3 -c "
import sqlite3; c=sqlite3.connect('d.db')
r=c.execute(\"SELECT cluster_id FROM clusters WHERE run_id=1 AND status='accepted' LIMIT 1\").fetchone()
print(r[0] if r else '')")
    if [ -n "$ACC" ]; then
        LOST=$(copy_run d.db 1 lost) || fail "copy run"
        python3 -c "
import sqlite3; c=sqlite3.connect('d.db')
c.execute(\"UPDATE clusters SET status='rejected-no-gain', reason='injected: gain within noise' WHERE run_id=$LOST AND cluster_id=$ACC\")
c.commit()"
        expect_rc 3 "lost fusion" $CLI gate --db d.db --baseline 1 --candidate "$LOST"
        grep -q "injected: gain within noise" out.txt || { cat out.txt; fail "lost fusion names the reason"; }
        echo "lost fusion: checked on a real plan"
    else
        echo "note: the full pipeline accepted no cluster on mlp-tiny; lost-fusion case covered by test_gate_db"
    fi
else
    echo "note: the full pipeline did not run here; lost-fusion case covered by test_gate_db"
fi
echo "gate_mlp_tiny: ok"
