#!/usr/bin/env bash
# bench/bench_import.sh — trace import throughput (MB/s of JSON text) and peak RSS on the largest
# corpus Kineto trace (gzip and plain) and on a synthetic Kineto trace of SIZE_MB (default 1000)
# generated into TMPDIR and deleted afterwards. Prints figures; asserts nothing.
#   usage: bench/bench_import.sh            (env: BUILD=dir, SIZE_MB=n, FA_CORPUS=dir, HTA=1)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build-bench}
CORPUS=${FA_CORPUS:-$SRC/../shared/corpus}
SIZE_MB=${SIZE_MB:-1000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fa-bench-import.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" --target fa_collector fa_core -j2 >/dev/null
# Only the import objects (and core) are pulled from the static libraries.
cc -O2 -std=c11 -D_GNU_SOURCE -I"$SRC" -I"$BUILD" "$SRC/bench/bench_import.c" -o "$TMP/bench_import" \
   "$BUILD/libfa_collector.a" "$BUILD/libfa_core.a" -lyajl -lz -lsqlite3 -lcrypto -lm
B="$TMP/bench_import"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
LARGEST=$CORPUS/traces/kineto/hta/df_index_resolver__df_index_resolver.json.gz
if [ -f "$LARGEST" ]; then
    echo "== largest corpus trace (gzip, as stored)"
    "$B" yajl "$LARGEST"
    "$B" import "$LARGEST"
    echo "== same trace decompressed to plain JSON"
    gzip -dc "$LARGEST" > "$TMP/df_index_resolver.json"
    "$B" yajl "$TMP/df_index_resolver.json"
    "$B" import "$TMP/df_index_resolver.json"
    rm -f "$TMP/df_index_resolver.json"
    NSYS=$CORPUS/traces/nsys/perlmutter-cloverleaf-cuda.sqlite
    [ -f "$NSYS" ] && { echo "== nsys export"; "$B" import "$NSYS"; }
else
    echo "(corpus not found at $CORPUS: corpus figures skipped)"
fi

echo "== synthetic Kineto trace, ${SIZE_MB} MB"
"$B" gen "$TMP/synthetic.json" "$SIZE_MB"
ls -l "$TMP/synthetic.json" | awk '{printf "   generated %.1f MB\n", $5/1e6}'
"$B" yajl "$TMP/synthetic.json"
"$B" import "$TMP/synthetic.json"
# Adversarial inputs (issue 15: every parser linear in its input): MB/s on each shape at two
# sizes; a quadratic parser shows as MB/s falling with size.
ADV_MB=${ADV_MB:-50}
echo "== adversarial Kineto traces, ${ADV_MB} and $((ADV_MB * 2)) MB (MB/s should not fall with size)"
for kind in quotes one-name digits correlation nesting deep-json; do
    for mb in "$ADV_MB" $((ADV_MB * 2)); do
        "$B" adv "$kind" "$TMP/adv-$kind.json" "$mb"
        printf '%-12s ' "$kind"
        "$B" import "$TMP/adv-$kind.json" || true
        rm -f "$TMP/adv-$kind.json"
    done
done

# Optional: Holistic Trace Analysis (pip holistictraceanalysis) parsing the same files, same
# machine, same run. HTA_PY=python with hta installed (e.g. a venv); HTA_MB synthetic size for
# it (default 200: HTA holds the whole document and a DataFrame in memory).
HTA_PY=${HTA_PY:-python3}
if [ "${HTA:-0}" = 1 ] && "$HTA_PY" -c 'import hta' 2>/dev/null; then
    HTA_MB=${HTA_MB:-200}
    "$B" gen "$TMP/synthetic_hta.json" "$HTA_MB"
    for f in "$LARGEST" "$TMP/synthetic_hta.json"; do
        [ -f "$f" ] || continue
        "$B" import "$f"
        /usr/bin/time -f "HTA       %e s wall, %U+%S s cpu, peak RSS %M KiB" "$HTA_PY" -c '
import sys, time, logging
logging.disable(logging.WARNING)
from hta.common.trace_parser import parse_trace_dataframe
from hta.configs.parser_config import ParserConfig
t = time.perf_counter()
meta, df, sym = parse_trace_dataframe(sys.argv[1], ParserConfig())
print("HTA       %-52s %d events in %.3f s" % (sys.argv[1].rsplit("/", 1)[-1], len(df), time.perf_counter() - t))
' "$f" 2>&1 | grep -E '^HTA' || true
    done
    rm -f "$TMP/synthetic_hta.json"
fi
rm -f "$TMP/synthetic.json"
