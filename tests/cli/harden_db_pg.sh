#!/usr/bin/env bash
# harden_db_pg — issue 32 on a real PostgreSQL server (scripts/pg-test-server.sh; skipped with 77
# where it is absent, a failure under FA_PG_REQUIRED=1 as in .ci/run): a run database from
# elsewhere imported into the server never puts its own names into the server's SQL (a crafted
# column name that closes PostgreSQL's column list rewrote another run, or ran a program, with
# exit 0 before); a server whose schema was altered (a column, a view, a trigger) is refused, named;
# one over-long value on the server is refused naming table, row and column; a password in any
# form of connection string (a '?', '#', '/' or bad '%' in it, "?%70assword=", a keyword/value
# string, sslpassword, the scheme in capitals) is never printed nor stored, and the run works; a
# statement the server cannot finish ends at the step limit (statement_timeout).
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
SRC=${FA_SOURCE_DIR:?FA_SOURCE_DIR must point at the source tree}
PY=${FA_PYTHON:-python3}
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
chmod 755 "$T"
cd "$T"
BASE=${URI%/*}
PORT=${BASE##*:}
psql -q "$URI" -c 'CREATE DATABASE team' -c 'CREATE DATABASE altered' || fail "createdb"
DB=$BASE/team
q() { psql -Atq "$DB" -c "$1"; }

"$CLI" run zoo:mlp-tiny --db "$DB" --iters 3 --no-apply --tag main >/dev/null 2>err.txt || { cat err.txt; fail "run on the server"; }
"$CLI" run zoo:mlp-tiny --db src.db --iters 3 --no-apply --tag other >/dev/null 2>err.txt || { cat err.txt; fail "local run"; }
before=$(q "SELECT id, tag, status, iter_median_ns FROM fuse_advise.runs ORDER BY id")

# A copy of src.db whose kernels table has its `name` column moved last and renamed to a name that
# SQLite reads as `"name" AS [alias]` and PostgreSQL as `"name") FROM STDIN; <SQL>; --` (nested
# /* */ comments are PostgreSQL's only; [..] quoting is SQLite's only).
craft() { # OUT PAYLOAD
  "$PY" - src.db "$1" "$2" <<'EOF'
import shutil, sqlite3, sys
src, out, payload = sys.argv[1:4]
shutil.copy(src, out)
c = sqlite3.connect(out)
c.execute("PRAGMA foreign_keys = OFF")
info = list(c.execute("PRAGMA table_info(kernels)"))
keep = [r for r in info if r[1] != "name"]
evil = '"name" /* /* */ [ */ ) FROM STDIN; ' + payload + ' -- ]'
qi = lambda s: '"' + s.replace('"', '""') + '"'
c.execute("CREATE TABLE k2 (" + ", ".join(qi(r[1]) + " " + r[2] for r in keep) + ", " + qi(evil) + " TEXT)")
c.execute("INSERT INTO k2 SELECT " + ", ".join(qi(r[1]) for r in keep) + ", name FROM kernels")
c.execute("DROP TABLE kernels")
c.execute("ALTER TABLE k2 RENAME TO kernels")
c.commit()
EOF
}
craft evil-update.db "UPDATE runs SET tag = 'pwned', status = 'failed', iter_median_ns = 1 WHERE id = 1;" || fail "craft"
craft evil-program.db "COPY runs (kind) FROM PROGRAM 'touch $T/pwned-by-copy-program';" || fail "craft"
for f in evil-update.db evil-program.db; do
  "$CLI" import-runs "$f" --db "$DB" >out.txt 2>err.txt; rc=$?
  [ $rc = 1 ] || { cat out.txt err.txt; fail "import-runs $f: exit $rc (want 1)"; }
  grep -q "table 'kernels' has a column" err.txt || { cat err.txt; fail "import-runs $f: the column is not named"; }
  grep -q "copied" out.txt && grep -qv " 0 runs copied" out.txt && { cat out.txt; fail "import-runs $f copied runs"; }
done
[ "$(q "SELECT id, tag, status, iter_median_ns FROM fuse_advise.runs ORDER BY id")" = "$before" ] \
  || fail "the server's runs changed: $(q 'SELECT id, tag, status FROM fuse_advise.runs')"
[ -e "$T/pwned-by-copy-program" ] && fail "COPY ... FROM PROGRAM ran on the server"
# the honest file still imports
"$CLI" import-runs src.db --db "$DB" >out.txt 2>err.txt || { cat err.txt; fail "import-runs src.db"; }
grep -q "1 run copied" out.txt || { cat out.txt; fail "import-runs src.db count"; }

# A server whose schema was altered is refused (every verb; export-runs names it), named.
ALT=$BASE/altered
"$CLI" run zoo:mlp-tiny --db "$ALT" --iters 3 --no-apply >/dev/null 2>err.txt || { cat err.txt; fail "run on altered"; }
alter() { psql -q "$ALT" -c "$1" || fail "alter: $1"; }
expect_refused() { # WHAT-IN-MESSAGE
  for v in "runs --db $ALT" "show 1 --db $ALT" "export-runs --db $ALT --to exported.db"; do
    # shellcheck disable=SC2086
    "$CLI" $v >out.txt 2>err.txt; rc=$?
    [ $rc = 1 ] || { cat err.txt; fail "$v with $1: exit $rc"; }
    grep -qF -- "$1" err.txt || { cat err.txt; fail "$v: the message does not name $1"; }
  done
}
alter 'ALTER TABLE fuse_advise.kernels ADD COLUMN "x) FROM STDIN; --" text'
expect_refused "table 'kernels', column 'x) FROM STDIN; --'"
alter 'ALTER TABLE fuse_advise.kernels DROP COLUMN "x) FROM STDIN; --"'
alter 'CREATE VIEW fuse_advise.extra AS SELECT 1 AS x'
expect_refused "'extra' (relkind v) is not a plain table"
alter 'DROP VIEW fuse_advise.extra'
alter "CREATE FUNCTION fuse_advise.t() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NEW; END \$\$; CREATE TRIGGER t BEFORE INSERT ON fuse_advise.runs FOR EACH ROW EXECUTE FUNCTION fuse_advise.t()"
expect_refused "that fuse-advise did not create (code there would run"
alter 'DROP TRIGGER t ON fuse_advise.runs; DROP FUNCTION fuse_advise.t()'
alter "CREATE TRIGGER t BEFORE INSERT ON fuse_advise.runs FOR EACH ROW EXECUTE FUNCTION fuse_advise.fa_runs_delete_kernels()"
expect_refused "a rule or trigger that is not"
alter 'DROP TRIGGER t ON fuse_advise.runs'
# Code in our namespace that a statement of ours would pick over pg_catalog's: an aggregate max()
# over a domain given to schema_version.version ran on the version read of a read-only verb (the
# sixth attack pass: COPY ... TO PROGRAM with the client's role); a changed body of our own
# function. Refused before any statement reads a table; nothing of theirs runs.
alter "CREATE TABLE public.pwned(who text)"
alter "CREATE DOMAIN fuse_advise.ver AS bigint; CREATE FUNCTION fuse_advise.evil(s bigint, v fuse_advise.ver) RETURNS bigint LANGUAGE plpgsql AS \$\$ BEGIN INSERT INTO public.pwned VALUES (current_user); RETURN greatest(coalesce(s, 0), v::bigint); END \$\$; CREATE AGGREGATE fuse_advise.max(fuse_advise.ver) (SFUNC = fuse_advise.evil, STYPE = bigint); ALTER TABLE fuse_advise.schema_version ALTER COLUMN version TYPE fuse_advise.ver"
expect_refused "that fuse-advise did not create (code there would run"
[ "$(psql -Atq "$ALT" -c 'SELECT count(*) FROM public.pwned')" = 0 ] || fail "the planted aggregate ran"
alter "ALTER TABLE fuse_advise.schema_version ALTER COLUMN version TYPE bigint; DROP AGGREGATE fuse_advise.max(fuse_advise.ver); DROP FUNCTION fuse_advise.evil(bigint, fuse_advise.ver); DROP DOMAIN fuse_advise.ver"
alter "CREATE OR REPLACE FUNCTION fuse_advise.fa_try_jsonb(t text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS \$\$ BEGIN INSERT INTO public.pwned VALUES ('body'); RETURN NULL; END \$\$"
expect_refused "that fuse-advise did not create (code there would run"
alter "CREATE OR REPLACE FUNCTION fuse_advise.fa_try_jsonb(t text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN RETURN t::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END \$\$"
alter "CREATE OPERATOR fuse_advise.= (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = pg_catalog.int84eq)"
expect_refused "that fuse-advise did not create (code there would run"
alter "DROP OPERATOR fuse_advise.= (bigint, integer)"
# what runs a function of another schema on our statements: a CHECK constraint, an expression
# index, row-level security with a policy, an inheriting table (the fourth attack pass ran a
# planted public.evil() through each, with exit 0)
alter "CREATE FUNCTION public.evil(t text) RETURNS boolean LANGUAGE plpgsql AS \$\$ BEGIN INSERT INTO public.pwned VALUES (t); RETURN true; END \$\$"
alter "CREATE FUNCTION public.evil_imm(i bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT i'"
for plant in "ALTER TABLE fuse_advise.runs ADD CONSTRAINT chk CHECK (public.evil('check:' || id))@@ALTER TABLE fuse_advise.runs DROP CONSTRAINT chk" \
             "CREATE INDEX evil_ix ON fuse_advise.runs (public.evil_imm(id))@@DROP INDEX fuse_advise.evil_ix" \
             "ALTER TABLE fuse_advise.runs ENABLE ROW LEVEL SECURITY; CREATE POLICY p ON fuse_advise.runs USING (public.evil('policy'))@@DROP POLICY p ON fuse_advise.runs; ALTER TABLE fuse_advise.runs DISABLE ROW LEVEL SECURITY" \
             "CREATE TABLE public.runs_extra () INHERITS (fuse_advise.runs)@@DROP TABLE public.runs_extra"; do
  alter "${plant%%@@*}"
  alter "DELETE FROM public.pwned" # a CHECK runs once on the rows there when it is added
  expect_refused "that fuse-advise did not create (code there would run"
  [ "$(psql -Atq "$ALT" -c 'SELECT count(*) FROM public.pwned')" = 0 ] || fail "a planted function ran: ${plant%%@@*}"
  alter "${plant#*@@}"
done
"$CLI" runs --db "$ALT" >/dev/null 2>err.txt || { cat err.txt; fail "runs once the plants are gone"; }
alter "ALTER TABLE fuse_advise.runs ALTER COLUMN trace_source SET DEFAULT fuse_advise.fa_try_jsonb('1')::text"
expect_refused "table 'runs', column 'trace_source' has a computed default"
alter 'ALTER TABLE fuse_advise.runs ALTER COLUMN trace_source DROP DEFAULT'
"$CLI" runs --db "$ALT" >/dev/null 2>err.txt || { cat err.txt; fail "runs once the schema is ours again"; }
# one value over the 16 MiB limit on the server: refused naming table, row and column
alter "UPDATE fuse_advise.runs SET error = repeat('a', 17000000) WHERE id = 1"
"$CLI" runs --db "$ALT" >out.txt 2>err.txt; rc=$?
[ $rc = 1 ] && grep -q "table 'runs', row #1 of the query, column 'error': a value of 17000000 bytes" err.txt \
  || { cat err.txt; fail "a 17 MB error text on the server: exit $rc"; }
alter "UPDATE fuse_advise.runs SET error = NULL WHERE id = 1"
# numbers of the right type outside their column's domain (store/domain.c): refused, named
alter "UPDATE fuse_advise.runs SET iter_median_ns = -5 WHERE id = 1"
expect_refused "table 'runs', row #1 of the query, column 'iter_median_ns': -5 where the column holds a count"
alter "UPDATE fuse_advise.runs SET iter_median_ns = NULL WHERE id = 1"
alter "UPDATE fuse_advise.kernels SET occupancy = 'Infinity' WHERE run_id = 1 AND seq = 0"
"$CLI" export-runs --db "$ALT" --to exported-inf.db >out.txt 2>err.txt; rc=$?
[ $rc = 1 ] && grep -q "table 'kernels', row #[0-9]* of the query, column 'occupancy': +inf where the column holds an occupancy" err.txt \
  || { cat err.txt; fail "an occupancy of +inf on the server: exit $rc"; }
alter "UPDATE fuse_advise.kernels SET occupancy = 'NaN' WHERE run_id = 1 AND seq = 0"
"$CLI" export-runs --db "$ALT" --to exported-nan.db >out.txt 2>err.txt; rc=$?
[ $rc = 1 ] && grep -qF "column 'occupancy': NaN where" err.txt || { cat err.txt; fail "an occupancy of NaN on the server: exit $rc"; }
alter "UPDATE fuse_advise.kernels SET occupancy = -1 WHERE run_id = 1 AND seq = 0"
"$CLI" runs --db "$ALT" >/dev/null 2>err.txt || { cat err.txt; fail "runs once the values are in their domains again"; }

# Connection strings: each form works against the server (trust authentication ignores the
# password) and nothing prints or stores the password.
S=Zq9sEcr3t
forms=(
  "postgresql://fa:Zq9s?Ecr3t@127.0.0.1:$PORT/team"
  "postgresql://fa:Zq9s#Ecr3t@127.0.0.1:$PORT/team"
  "postgresql://fa@127.0.0.1:$PORT/team?%70assword=Zq9sEcr3t"
  "postgresql://fa@127.0.0.1:$PORT/team?sslpassword=Zq9sEcr3t"
  "host=127.0.0.1 port=$PORT dbname=team user=fa password=Zq9sEcr3t"
  "host=127.0.0.1 port=$PORT dbname=team user=fa password='Zq9s Ecr3t'"
  "POSTGRESQL://fa:Zq9sEcr3t@127.0.0.1:$PORT/team"
  "Postgres://fa:Zq9sEcr3t@127.0.0.1:$PORT/team"
)
leak() { grep -l -e "$S" -e Zq9s -e Ecr3t "$@" 2>/dev/null; }
n0=$(q "SELECT count(*) FROM fuse_advise.runs")
for f in "${forms[@]}"; do
  "$CLI" run zoo:mlp-tiny --db "$f" --iters 3 --no-apply --tag conn --out rep >out.txt 2>err.txt \
    || { cat err.txt; fail "run --db '$f'"; }
  "$CLI" runs --db "$f" --json >runs.json 2>>err.txt || { cat err.txt; fail "runs --db '$f'"; }
  id=$(q "SELECT max(id) FROM fuse_advise.runs")
  "$CLI" show "$id" --db "$f" >show.txt 2>>err.txt || { cat err.txt; fail "show --db '$f'"; }
  "$CLI" report "$id" --db "$f" -o rep2 >>out.txt 2>>err.txt || { cat err.txt; fail "report --db '$f'"; }
  leak out.txt err.txt runs.json show.txt rep/* rep2/* && fail "'$f': the password was printed or written"
  [ -z "$(q "SELECT id FROM fuse_advise.runs WHERE command_line LIKE '%Zq9s%' OR command_line LIKE '%Ecr3t%'")" ] \
    || fail "'$f': the password was stored in runs.command_line"
  ls | grep -q -e Zq9s -e 'host=' && fail "'$f': a local file was created"
done
[ "$(q "SELECT count(*) FROM fuse_advise.runs")" = $((n0 + ${#forms[@]})) ] || fail "not every form stored its run"

# A statement the server cannot finish ends at the step limit (statement_timeout, issue 32): another
# session holds an exclusive lock on the runs table; `runs` must fail within seconds, naming the
# timeout, instead of waiting for as long as the lock is held.
psql -q "$DB" -c 'BEGIN; LOCK TABLE fuse_advise.runs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT' >/dev/null 2>&1 &
locker=$!
for _ in $(seq 50); do
  [ "$(q "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'runs' AND l.mode = 'AccessExclusiveLock' AND l.granted")" = 1 ] && break
  sleep 0.1
done
t0=$(date +%s)
FA_DB_STEP_LIMIT_S=2 timeout 40 "$CLI" runs --db "$DB" >out.txt 2>err.txt
rc=$?
kill $locker 2>/dev/null; wait $locker 2>/dev/null
[ $rc = 1 ] || { cat out.txt err.txt; fail "runs behind a held lock: exit $rc, expected 1 within the step limit"; }
[ $(( $(date +%s) - t0 )) -lt 20 ] || fail "runs behind a held lock took $(( $(date +%s) - t0 )) s"
grep -qi "timeout" err.txt || { cat err.txt; fail "runs behind a held lock: the message does not name the timeout"; }
echo "harden_db_pg: ok"
