#!/usr/bin/env bash
# pg_libpq_absent — a machine where the PostgreSQL client library cannot be used answers a
# `postgresql://` store with a clear error (exit 1, naming the URI without its password and the
# loader's reason), never a crash, and a file store in the same folder still works. store/pg.c
# opens libpq.so.5 with dlopen on the first such store; the loader searches LD_LIBRARY_PATH
# first, so a folder holding (a) a file that is not a library and (b) a real shared library
# without libpq's functions stands in for a broken or foreign libpq, with no test hook in the
# shipped binary. A build without libpq answers with its own "built without" message.
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
URI='postgresql://ci:s3cret@127.0.0.1:1/perf'

expect_clear_error() { # VERB LIBDIR WHAT: exit 1, the redacted URI and WHAT in the message
  local verb=$1 dir=$2 what=$3 rc
  LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$CLI" "$verb" --db "$URI" >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 1 ] || fail "$verb with $dir: exit $rc (want 1): $(cat err.txt)"
  grep -q 'postgresql://ci:\*\*\*@127.0.0.1:1/perf' err.txt || fail "$verb: the message does not name the URI: $(cat err.txt)"
  grep -q 's3cret' err.txt out.txt && fail "$verb: the password is printed"
  grep -q -- "$what" err.txt || fail "$verb: the message does not say '$what': $(cat err.txt)"
  echo "ok: $verb --db postgresql://... with $(basename "$dir"): $(grep -m1 -- "$what" err.txt)"
}

if ! grep -aq 'libpq.so.5' "$CLI"; then # built without libpq: its own clear refusal
  "$CLI" runs --db "$URI" >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 1 ] && grep -q 'built without PostgreSQL support' err.txt || fail "no-libpq build: exit $rc: $(cat err.txt)"
  echo "ok: a build without libpq refuses postgresql:// clearly"
  exit 0
fi

# (a) not a library at all: dlopen itself fails ("file too short")
mkdir -p notalib && echo 'not a shared library' >notalib/libpq.so.5
expect_clear_error runs "$T/notalib" 'PostgreSQL client library could not be loaded'
# (b) a library without libpq's functions: dlopen succeeds, dlsym fails, named
command -v cc >/dev/null || { echo "SKIP: no C compiler to build the stand-in library"; exit 77; }
mkdir -p nosyms && echo 'int fa_not_libpq;' | cc -shared -fPIC -x c - -o nosyms/libpq.so.5 || fail "cc"
expect_clear_error runs "$T/nosyms" 'libpq.so.5 has no PQ'
# a model run and a gate on such a store: the same refusal, and nothing else is written
LD_LIBRARY_PATH="$T/notalib" "$CLI" run zoo:mlp-tiny --no-apply --iters 1 --warmup 0 --db "$URI" --out o \
  >out.txt 2>err.txt
rc=$?
[ $rc -eq 1 ] && grep -q 'could not be loaded' err.txt || fail "run: exit $rc: $(cat err.txt)"
echo "ok: run --db postgresql://... refused before any work"
LD_LIBRARY_PATH="$T/notalib" "$CLI" gate --baseline-db "$URI" --baseline-tag main --candidate-db c.db \
  >out.txt 2>err.txt
rc=$?
[ $rc -eq 1 ] && grep -q 'could not be loaded' err.txt || fail "gate: exit $rc (want 1): $(cat err.txt)"
echo "ok: gate --baseline-db postgresql://... refused (exit 1)"
# the file store is untouched by all this
LD_LIBRARY_PATH="$T/notalib" "$CLI" run zoo:mlp-tiny --no-apply --iters 1 --warmup 0 --db f.db --out o2 \
  >out.txt 2>err.txt || fail "a file store with a broken libpq on the path: $(cat err.txt)"
echo "ok: a file store works with a broken libpq on the path (libpq is opened only for postgresql://)"
echo "pg_libpq_absent: passed"
