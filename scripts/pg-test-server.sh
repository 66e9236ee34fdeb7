#!/usr/bin/env bash
# A throw-away PostgreSQL server for the run-store tests, from Debian's `postgresql` package, as
# a user would run one: initdb into a fresh folder, listening on 127.0.0.1 only, on a free port.
#
#   pg-test-server.sh start [PID]    prints "DIR URI" (URI: postgresql://fa@127.0.0.1:PORT/postgres);
#                                    with PID, the server is also stopped once that process is gone
#                                    (a test killed by a timeout leaves no server behind)
#   pg-test-server.sh stop DIR       stops the server and removes DIR
#   pg-test-server.sh restart DIR    stops and starts it again on the same port (same data)
#   pg-test-server.sh kill DIR       stops it at once (immediate shutdown), leaving DIR
#
# Exit 77 when the server binaries are absent (tests report themselves skipped). PostgreSQL
# refuses to run as root: as root the server runs as `nobody` (runuser), its folder owned by it.
# Trust authentication on loopback only; fsync off (a test server, its data is thrown away).
set -euo pipefail

pg_bin() {
  if [ -n "${FA_PG_BIN:-}" ]; then echo "$FA_PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && echo "$d"
}
BIN=$(pg_bin || true)
[ -n "$BIN" ] && [ -x "$BIN/initdb" ] && [ -x "$BIN/pg_ctl" ] || {
  echo "pg-test-server: no PostgreSQL server binaries (Debian package postgresql; or set FA_PG_BIN)" >&2
  exit 77
}

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

start_on() { # DIR PORT
  as_owner "$BIN/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 30 \
    -o "-p $2 -k $1 -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60" \
    start >/dev/null
}

case "${1:-}" in
start)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/fa-pg.XXXXXX")
  chmod 755 "$dir"
  [ "$(id -u)" -ne 0 ] || chown nobody "$dir"
  as_owner "$BIN/initdb" -D "$dir/data" -U fa --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2; rm -rf "$dir"; exit 1; }
  for _ in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + RANDOM % 40000 ))
    if start_on "$dir" "$port" 2>/dev/null; then
      echo "$port" >"$dir/port"
      if [ -n "${2:-}" ]; then
        self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
        nohup bash -c "while kill -0 $2 2>/dev/null && [ -d '$dir' ]; do sleep 2; done; bash '$self' stop '$dir'" \
          >/dev/null 2>&1 </dev/null &
      fi
      echo "$dir postgresql://fa@127.0.0.1:$port/postgres"
      exit 0
    fi
  done
  echo "pg-test-server: the server did not start:" >&2; tail -20 "$dir/server.log" >&2 || true
  rm -rf "$dir"; exit 1
  ;;
stop)
  dir=${2:?DIR}
  [ -d "$dir/data" ] && as_owner "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
restart)
  dir=${2:?DIR}
  as_owner "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  start_on "$dir" "$(cat "$dir/port")"
  ;;
kill)
  dir=${2:?DIR}
  as_owner "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
  ;;
*)
  echo "usage: pg-test-server.sh start | stop DIR | restart DIR | kill DIR" >&2; exit 2
  ;;
esac
