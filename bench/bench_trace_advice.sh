#!/usr/bin/env bash
# bench/bench_trace_advice.sh — whole `fuse-advise import` (parse, attribution, advice, storing the
# advice and the timeline window) on large real-shaped Kineto traces: MB/s of JSON per wall and per
# CPU second and peak RSS, one process per file. Prints figures; asserts nothing.
#   (graph-gzip: MB of the JSON inside the .gz.)
#   usage: bench/bench_trace_advice.sh     (env: BUILD=dir (a built tree), SIZE_MB=n eager size,
#                                           GRAPH_MB=n graph-replay size)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build}
SIZE_MB=${SIZE_MB:-500}
GRAPH_MB=${GRAPH_MB:-1000}
CLI=$BUILD/fuse-advise
[ -x "$CLI" ] || { echo "build $BUILD first (cmake --build $BUILD)"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fa-bench-advice.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cc -O2 -std=c11 -D_GNU_SOURCE -I"$SRC" -I"$BUILD" "$SRC/bench/bench_import.c" -o "$TMP/gen" \
   "$BUILD/libfa_collector.a" "$BUILD/libfa_core.a" -lyajl -lz -lsqlite3 -lcrypto -lm
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # run NAME FILE [MB of JSON: a gzip'd file's uncompressed size]
  local mb
  mb=${3:-$(stat -c %s "$2" | awk '{printf "%.1f", $1/1e6}')}
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$CLI" import "$2" --db "$TMP/$1.db" >"$TMP/$1.out" 2>&1 || { cat "$TMP/$1.out"; return 1; }
  read -r wall user sys rss <"$TMP/time"
  local kernels
  kernels=$(sed -n 's/.*events [0-9]*: kernels \([0-9]*\).*/\1/p' "$TMP/$1.out" | head -1)
  awk -v n="$1" -v mb="$mb" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v k="$kernels" 'BEGIN {
    printf "%-14s %8.1f MB  %9s kernels  %6.2f s wall  %7.1f MB/s wall  %7.1f MB/s cpu  peak RSS %7.1f MB\n",
           n, mb, k, w, mb / w, mb / (u + s), r / 1024 }'
  grep -m1 "advice state\|fusion opportunities" "$TMP/$1.out" || true
}
"$TMP/gen" gen "$TMP/eager.json" "$SIZE_MB"
run eager "$TMP/eager.json"
rm -f "$TMP/eager.json"
"$TMP/gen" graph "$TMP/graph.json" "$GRAPH_MB"
run graph-replay "$TMP/graph.json"
json_mb=$(stat -c %s "$TMP/graph.json" | awk '{printf "%.1f", $1/1e6}')
gzip -1 -c "$TMP/graph.json" > "$TMP/graph.json.gz"
rm -f "$TMP/graph.json"
run graph-gzip "$TMP/graph.json.gz" "$json_mb"
