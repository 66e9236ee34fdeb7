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
echo "report_cli: ok"
