#!/usr/bin/env bash
# bench/fuzz.sh — build the libFuzzer targets (fuzz/) and run each for SECONDS (default 60) on
# seeds read in place from ../shared/corpus; prints executions, exec/s and coverage per target.
#   bash bench/fuzz.sh [SECONDS] [TARGET...]      targets: onnx tensorproto kineto nsys args codegen
# Env: FA_FUZZ_BUILD (default build-fuzz), FA_CORPUS (default ../shared/corpus),
#      FA_FUZZ_KEEP (folder for grown corpora and
#      crash files; default a temp folder, removed unless a crash was found).
# Exit 1 if any target crashed, leaked or timed out; the reproducer is named in the output.
# Every crash becomes a regression: commit the input under tests/bad-input/regressions/<target>/
# (tests/unit/test_bad_fuzz_regressions.c feeds each file there to the same entry point).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(onnx tensorproto kineto nsys args codegen)
BUILD=${FA_FUZZ_BUILD:-build-fuzz}
CORPUS=${FA_CORPUS:-$PWD/../shared/corpus}
[ -d "$CORPUS" ] || { echo "fuzz.sh: no corpus at $CORPUS (set FA_CORPUS)" >&2; exit 77; }

if ! echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){(void)d;(void)n;return 0;}' \
     | clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz.sh: clang with libFuzzer not found (Debian: apt-get install clang libclang-rt-14-dev libomp-dev)" >&2
  exit 77
fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFA_SANITIZE=ON -DFA_FUZZ=ON \
    -DFA_WITH_CUDA=OFF >/dev/null
fi
if ! cmake --build "$BUILD" --target fuzz -j"$(nproc)" >"${TMPDIR:-/tmp}/fa-fuzz-build.log" 2>&1; then
  tail -20 "${TMPDIR:-/tmp}/fa-fuzz-build.log" >&2; exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fa-fuzz.XXXXXX")
KEEP=${FA_FUZZ_KEEP:-}
found=0
cleanup() { if [ -z "$KEEP" ] && [ $found -eq 0 ]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT

# ---- seeds (symlinks or files under $WORK; nothing from the corpus enters the repo) ----
seed_dir() { mkdir -p "$WORK/seeds/$1"; echo "$WORK/seeds/$1"; }
link_seeds() { # dir maxbytes files...
  local d=$1 max=$2; shift 2
  local i=0
  for f in "$@"; do
    [ -f "$f" ] || continue
    [ "$(stat -c %s "$f")" -le "$max" ] || continue
    ln -sf "$f" "$d/seed-$i"; i=$((i + 1))
  done
}
mapfile -t onnx_files < <(find "$CORPUS/onnx" -name '*.onnx' -size -256k 2>/dev/null | sort | head -400)
link_seeds "$(seed_dir onnx)" 262144 "${onnx_files[@]}"
mapfile -t pb_files < <(find "$CORPUS/onnx" -name '*.pb' -size -64k 2>/dev/null | sort | head -400)
link_seeds "$(seed_dir tensorproto)" 65536 "${pb_files[@]}"
mapfile -t kin_files < <(find "$CORPUS/traces/kineto" -type f \( -name '*.json' -o -name '*.gz' \) -size -128k 2>/dev/null | sort)
link_seeds "$(seed_dir kineto)" 131072 "${kin_files[@]}"
# nsys: a tiny export with the real export's schema (tables the importer reads) and a few rows.
NS=$(ls "$CORPUS"/traces/nsys/*.sqlite 2>/dev/null | head -1 || true)
nd=$(seed_dir nsys)
if [ -n "$NS" ] && command -v sqlite3 >/dev/null; then
  out="$nd/tiny-export.sqlite"
  {
    echo "PRAGMA page_size=512;"
    for t in META_DATA_EXPORT StringIds TARGET_INFO_GPU CUPTI_ACTIVITY_KIND_KERNEL \
             CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_MEMCPY; do
      sqlite3 "$NS" ".schema $t" | sed 's/--.*$//'
    done
    echo "ATTACH '$NS' AS src;"
    echo "INSERT INTO META_DATA_EXPORT SELECT * FROM src.META_DATA_EXPORT;"
    echo "INSERT INTO TARGET_INFO_GPU SELECT * FROM src.TARGET_INFO_GPU LIMIT 1;"
    echo "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM src.CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 6;"
    echo "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM src.CUPTI_ACTIVITY_KIND_RUNTIME
            WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL);"
    echo "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT * FROM src.CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start LIMIT 2;"
    echo "INSERT INTO StringIds SELECT * FROM src.StringIds WHERE id IN
            (SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL
             UNION SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME);"
    echo "DETACH src; VACUUM;"
  } | sqlite3 "$out"
fi
# args: a few command lines, NUL-separated.
ad=$(seed_dir args)
printf -- '--shape\0input=1x64' > "$ad/a"
printf -- '--shape=input=8x64\0--batch\0002\0--no-fold' > "$ad/b"
printf -- '--shape\0batch=4\0--target\0cpu\0--iters=3' > "$ad/c"
printf -- '--shape=input=1x2x3x4x5x6x7x8x9\0--batch=0' > "$ad/d"

# codegen: [op count, op bytes, NUL-separated tensor and node names]; the committed regression
# inputs (hostile names) seed it too.
cd_=$(seed_dir codegen)
printf '\003\000\001\002X\0a\0b\0c' > "$cd_/plain"
cp tests/bad-input/regressions/codegen/* "$cd_/" 2>/dev/null || true

# ---- run ----
declare -A MAXLEN=([onnx]=262144 [tensorproto]=65536 [kineto]=131072 [nsys]=65536 [args]=4096 [codegen]=2048)
printf '%-12s %10s %10s %8s %8s %s\n' target seconds execs exec/s cov result
for t in "${TARGETS[@]}"; do
  bin="$BUILD/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no $bin" >&2; exit 1; }
  mkdir -p "$WORK/grown/$t" "$WORK/crash/$t"
  log="$WORK/$t.log"
  rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len="${MAXLEN[$t]}" ${FA_FUZZ_SEED:+-seed=$FA_FUZZ_SEED} \
      -print_final_stats=1 -artifact_prefix="$WORK/crash/$t/" \
      "$WORK/grown/$t" "$WORK/seeds/$t" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  secs=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  res=ok
  if [ $rc -ne 0 ]; then
    res="FAILED rc=$rc: $(ls "$WORK/crash/$t" | head -3 | tr '\n' ' ')"
    found=1
    grep -m3 -E 'ERROR: |SUMMARY: ' "$log" >&2 || true
  fi
  printf '%-12s %10s %10s %8s %8s %s\n' "$t" "$SECS" "${execs:-0}" "${secs:-0}" "${cov:-0}" "$res"
  if [ -n "$KEEP" ]; then mkdir -p "$KEEP"; cp -r "$WORK/crash/$t" "$KEEP/crash-$t" 2>/dev/null || true; cp "$log" "$KEEP/" ; fi
done
if [ $found -ne 0 ]; then echo "fuzz.sh: crashes/logs kept in $WORK" >&2; exit 1; fi
