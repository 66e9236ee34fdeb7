#!/usr/bin/env bash
# harden_readonly_fs — issue 15: the read verbs (runs, show, gate, report into another folder)
# work on a run database that lives on a read-only filesystem and leave nothing behind. The
# read-only filesystem is a read-only bind mount in a private user+mount namespace
# (unshare -rm); where the kernel refuses those namespaces the test reports itself skipped.
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
command -v unshare >/dev/null || { echo "skip: unshare not found"; exit 77; }
unshare -rm true 2>/dev/null || { echo "skip: user/mount namespaces not permitted here"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$T/ro" "$T/out"
for tag in base cand; do
    "$CLI" run zoo:mlp-tiny --no-apply --iters 3 --warmup 0 --threads 1 --tag $tag --db "$T/ro/runs.db" \
        >/dev/null 2>"$T/err" || { cat "$T/err"; fail "setup run ($tag)"; }
done
[ ! -e "$T/ro/runs.db-wal" ] && [ ! -e "$T/ro/runs.db-shm" ] || fail "setup left -wal/-shm"
before=$(ls -la "$T/ro" | md5sum)
# inside the namespace: bind the folder read-only over itself, then read
unshare -rm bash -s "$CLI" "$T" <<'INNER' >"$T/log" 2>&1
set -u
CLI=$1 T=$2
mount --bind -o ro "$T/ro" "$T/ro" || exit 90
touch "$T/ro/probe" 2>/dev/null && exit 91   # must be read-only now
rc=0
"$CLI" runs --db "$T/ro/runs.db" || rc=1
"$CLI" runs --json --db "$T/ro/runs.db" >/dev/null || rc=2
"$CLI" show 1 --db "$T/ro/runs.db" >/dev/null || rc=3
"$CLI" gate --baseline 1 --candidate 2 --max-regression 10% --db "$T/ro/runs.db"; g=$?
[ $g = 0 ] || [ $g = 3 ] || rc=4
"$CLI" report 2 --db "$T/ro/runs.db" -o "$T/out/report" >/dev/null || rc=5
exit $rc
INNER
rc=$?
[ $rc = 0 ] || { cat "$T/log"; fail "read verbs on a read-only filesystem: step $rc failed"; }
grep -q "cand" "$T/log" || { cat "$T/log"; fail "runs did not list the runs"; }
[ -s "$T/out/report/report.html" ] || fail "report not written"
after=$(ls -la "$T/ro" | md5sum)
[ "$before" = "$after" ] || { ls -la "$T/ro"; fail "the database folder changed"; }
echo "ok: runs, show, gate and report read a database on a read-only filesystem and left nothing behind"
