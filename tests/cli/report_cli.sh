#!/usr/bin/env bash
# tests/cli/report_cli — `fuse-advise report` as a user runs it: default folder report-RUN with all
# six files, `latest` after a run, exit codes (0 ok, 1 missing database / run / unwritable folder
# with a message naming it, 2 usage), and the database is only read (its bytes do not change).
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "report_cli: FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC WHAT CMD...
  local want=$1 what=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "$what: exit $rc, expected $want"; }
}

expect_rc 1 "missing database" "$CLI" report --db "$tmp/none.db"
grep -q "none.db" "$tmp/err" || fail "missing database message does not name the file"

"$CLI" run zoo:mlp-tiny --no-apply --iters 2 --db fa.db >/dev/null 2>&1 || fail "run failed"
sum_before=$(sha256sum fa.db | cut -d' ' -f1)

expect_rc 0 "report latest (default folder)" "$CLI" report --db fa.db
for f in report.html graph.dot graph.svg trace.json summary.json kernels.csv; do
  [ -s "report-1/$f" ] || fail "report-1/$f missing"
done
grep -q "report-1/report.html" "$tmp/out" || fail "stdout does not print the report path"

expect_rc 0 "report 1 -o DIR" "$CLI" report 1 --db fa.db -o "$tmp/a/b/c"
[ -s "$tmp/a/b/c/report.html" ] || fail "-o with missing parents"
ls "$tmp/a/b/c" | grep '\.tmp' >/dev/null && fail "temporary files left behind"

expect_rc 1 "unknown run" "$CLI" report 42 --db fa.db
grep -q "42" "$tmp/err" || fail "unknown run message does not name the run"

touch "$tmp/blocker"
expect_rc 1 "unwritable folder" "$CLI" report 1 --db fa.db -o "$tmp/blocker/out"
grep -q "blocker" "$tmp/err" || fail "unwritable folder message does not name it"

expect_rc 2 "bad run id" "$CLI" report abc --db fa.db
expect_rc 2 "unknown option" "$CLI" report --frobnicate --db fa.db
expect_rc 2 "-o without value" "$CLI" report 1 --db fa.db -o
expect_rc 0 "--help" "$CLI" report --help

sum_after=$(sha256sum fa.db | cut -d' ' -f1)
[ "$sum_before" = "$sum_after" ] || fail "report modified the database"

# the end-to-end error of an applied run is stored: `report --out OTHER` rebuilds it from the
# database alone (it was null there before schema v4)
"$CLI" run zoo:mlp-tiny --iters 2 --db applied.db --out "$tmp/live" >/dev/null 2>&1 || fail "applied run failed"
e2e() { sed -n 's/.*"e2e_max_rel_error":\([^,}]*\).*/\1/p' "$1/summary.json"; }
live=$(e2e "$tmp/live")
case "$live" in ''|null) fail "the live run's summary.json has no end-to-end error ($live)" ;; esac
expect_rc 0 "report latest --out OTHER" "$CLI" report latest --db applied.db --out "$tmp/other"
[ "$(e2e "$tmp/other")" = "$live" ] || fail "report --out OTHER: e2e_max_rel_error '$(e2e "$tmp/other")', the run wrote '$live'"
# an `advise RUN` after the run adds a proposed plan: the run's report, its line in `runs` and its
# stored plan status stay those of the plan that was applied and measured end to end
cp "$tmp/live/summary.json" "$tmp/live.summary.json"
expect_rc 0 "advise after run" "$CLI" advise 1 --db applied.db
expect_rc 0 "report after advise" "$CLI" report 1 --db applied.db --out "$tmp/after"
python3 - "$tmp/live.summary.json" "$tmp/after/summary.json" <<'EOF2' || fail "report after advise differs from the run's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("e2e_verdict", "e2e_max_rel_error", "speedup", "measured_saving_ns", "clusters"):
    assert a.get(k) == b.get(k), (k, a.get(k), b.get(k))
assert a.get("e2e_verdict"), a.get("e2e_verdict")
EOF2
expect_rc 0 "runs after advise" "$CLI" runs --db applied.db
grep -E "^ +1 +run .*\[e2e (win|loss|no-clusters)\]" "$tmp/out" >/dev/null || { cat "$tmp/out"; fail "runs lost the applied verdict after advise"; }
python3 - "$tmp/applied.db" <<'EOF2' || fail "plan status"
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT plan_id, status FROM plans WHERE run_id=1 ORDER BY plan_id").fetchall()
assert rows == [(1, "applied"), (2, "proposed")], rows
EOF2
# a filter that matches nothing says so, not that the database is empty
expect_rc 0 "runs --model nothing" "$CLI" runs --db applied.db --model no-such-model
grep -q "none of the 2 runs in applied.db match the filters" "$tmp/out" || { cat "$tmp/out"; fail "runs with no match"; }

# the fused twin's row carries what its own trace holds, not the baseline's iteration count
expect_rc 0 "show the fused twin" "$CLI" show 2 --db applied.db --json
python3 - "$tmp/out" <<'EOF2' || fail "the fused twin's iters"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["run"]["kind"] == "fused" and d["run"]["iters"] == d["iterations"], (d["run"], d["iterations"])
EOF2
# a fused twin made by `apply RUN` names that command, not the baseline's `run --no-apply`
"$CLI" run zoo:mlp-tiny --no-apply --iters 2 --threads 1 --db twin.db >/dev/null 2>&1 || fail "baseline run for apply"
expect_rc 0 "apply 1" "$CLI" apply 1 --iters 2 --db twin.db --out "$tmp/twin-out"
python3 - "$tmp/twin.db" <<'EOF2' || fail "the fused twin's command line"
import sqlite3, sys
rows = dict(sqlite3.connect(sys.argv[1]).execute("SELECT kind, command_line FROM runs").fetchall())
assert "--no-apply" in rows["run"] and " apply 1" in rows["fused"] and "--no-apply" not in rows["fused"], rows
EOF2
echo "report_cli: ok"
