#!/usr/bin/env bash
# pg_store — the CLI on a PostgreSQL run store, as a team would use it: a real server from
# Debian's postgresql (scripts/pg-test-server.sh; skipped with 77 where it is absent, a failure
# under FA_PG_REQUIRED=1 as in .ci/run). `run --db postgresql://...` and FUSE_ADVISE_DB; `runs
# --model/--device/--tag` across hosts; `gate --baseline-db SERVER --baseline-tag main
# --candidate-db LOCAL.db`; a password in the URI is warned about and never stored; an
# unreachable server and a read verb on an empty server fail with exit 1 and a clear message;
# export-runs / import-runs between a file and the server give identical reports.
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
SRC=${FA_SOURCE_DIR:?FA_SOURCE_DIR must point at the source tree}
fail() { echo "FAIL: $*"; exit 1; }
out=$(bash "$SRC/scripts/pg-test-server.sh" start $$)
rc=$?
if [ $rc -ne 0 ]; then
  [ "${FA_PG_REQUIRED:-0}" = 1 ] && fail "no PostgreSQL test server (exit $rc) and FA_PG_REQUIRED=1"
  [ $rc -eq 77 ] && { echo "skip: no PostgreSQL server binaries"; exit 77; }
  fail "the PostgreSQL test server did not start"
fi
set -- $out
PGDIR=$1 URI=$2
T=$(mktemp -d)
trap 'bash "$SRC/scripts/pg-test-server.sh" stop "$PGDIR"; rm -rf "$T"' EXIT
cd "$T"
BASE=${URI%/*}
psql -q "$URI" -c 'CREATE DATABASE team' -c 'CREATE DATABASE empty' || fail "createdb"
DB=$BASE/team

# a read verb on a server without a run store: exit 1, nothing created
"$CLI" runs --db "$BASE/empty" >out.txt 2>err.txt; rc=$?
[ $rc = 1 ] || fail "runs on an empty server: exit $rc"
grep -q "no fuse-advise run database on this server" err.txt || { cat err.txt; fail "empty-server message"; }
[ "$(psql -Atq "$BASE/empty" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'fuse_advise'")" = 0 ] \
  || fail "a read verb created the schema"

# unreachable server: exit 1, the URI named, its password not
"$CLI" runs --db "postgresql://ci:hunter2@127.0.0.1:1/x?connect_timeout=3" >out.txt 2>err.txt; rc=$?
[ $rc = 1 ] || fail "unreachable server: exit $rc"
grep -q "cannot connect to the PostgreSQL server" err.txt || { cat err.txt; fail "unreachable message"; }
grep -q "hunter2" err.txt out.txt && fail "the password was printed"

# main: two runs tagged main on the server (one through FUSE_ADVISE_DB), with a password in the URI
PWURI=${DB/fa@/fa:letmein@}
"$CLI" run zoo:mlp-tiny --db "$PWURI" --iters 30 --tag main --no-apply >out.txt 2>err.txt \
  || { cat out.txt err.txt; fail "run on the server"; }
grep -q "warning: the command line holds a password" err.txt || { cat err.txt; fail "no password warning"; }
FUSE_ADVISE_DB=$DB "$CLI" run zoo:mlp-tiny --iters 30 --tag main --no-apply >out.txt 2>err.txt \
  || { cat out.txt err.txt; fail "run through FUSE_ADVISE_DB"; }
[ -e fuse-advise.db ] && fail "FUSE_ADVISE_DB ignored: a local file was created"
n=$(psql -Atq "$DB" -c "SELECT count(*) FROM fuse_advise.runs WHERE command_line LIKE '%letmein%'")
[ "$n" = 0 ] || fail "a password was stored in runs.command_line"
psql -Atq "$DB" -c "SELECT command_line FROM fuse_advise.runs ORDER BY id LIMIT 1" | grep -q 'fa:\*\*\*@' \
  || fail "the stored command line lost its redacted URI"
# another machine's run of another model
psql -q "$DB" -c "UPDATE fuse_advise.runs SET host = 'ci-runner-7' WHERE id = (SELECT max(id) FROM fuse_advise.runs WHERE kind = 'run')"

"$CLI" runs --db "$DB" --model mlp-tiny --device ci-runner-7 >out.txt 2>err.txt || fail "runs --device"
[ "$(grep -c ' run ' out.txt)" = 1 ] || { cat out.txt; fail "runs --device ci-runner-7 lists one run"; }
grep -q '@ci-runner-7' out.txt || fail "runs shows the host of a shared store's run"
"$CLI" runs --db "$DB" --json --tag main | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["runs"]) == 2 and all(r["tag"] == "main" for r in d["runs"]), d' \
  || fail "runs --tag main --json"

# the candidate runs locally (SQLite) and is gated against the server's main
"$CLI" run zoo:mlp-tiny --db local.db --iters 30 --no-apply >out.txt 2>err.txt || fail "local run"
"$CLI" gate --baseline-db "$DB" --baseline-tag main --candidate-db local.db --json >gate.json 2>err.txt; rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || { cat err.txt; fail "gate against the server: exit $rc"; }
python3 - "$DB" <<'EOF' || fail "gate --json: baseline from the server's main, candidate from the file"
import json, sys
d = json.load(open("gate.json"))
assert d["baseline"]["db"] == sys.argv[1] and d["baseline"]["tag"] == "main", d["baseline"]
assert d["candidate"]["db"] == "local.db", d["candidate"]
EOF

# history moves both ways with identical reports
"$CLI" export-runs --db "$DB" --to moved.db >out.txt 2>err.txt || { cat err.txt; fail "export-runs"; }
grep -q "2 runs copied" out.txt || { cat out.txt; fail "export-runs count"; }
"$CLI" export-runs --db "$DB" --to moved.db >out.txt 2>err.txt || fail "export-runs again"
grep -q "0 runs copied" out.txt || { cat out.txt; fail "a second export copies nothing"; }
"$CLI" import-runs local.db --db "$DB" >out.txt 2>err.txt || { cat err.txt; fail "import-runs"; }
grep -q "1 run copied" out.txt || { cat out.txt; fail "import-runs count"; }
id_srv=$(psql -Atq "$DB" -c "SELECT min(id) FROM fuse_advise.runs")
"$CLI" report "$id_srv" --db "$DB" -o rep_srv >/dev/null 2>err.txt || { cat err.txt; fail "report from the server"; }
"$CLI" report 1 --db moved.db -o rep_file >/dev/null 2>err.txt || { cat err.txt; fail "report from the exported file"; }
python3 - <<'EOF' || fail "summary.json differs between the server and the exported file"
import json
a = json.load(open("rep_srv/summary.json")); b = json.load(open("rep_file/summary.json"))
for d in (a, b): d.pop("run_id", None); d.pop("fused_run_id", None)
assert a == b, (a, b)
EOF
cmp -s rep_srv/kernels.csv rep_file/kernels.csv || fail "kernels.csv differs"
echo "pg_store: ok"
