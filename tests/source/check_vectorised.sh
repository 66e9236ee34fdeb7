#!/usr/bin/env bash
# tests/source/check_vectorised — the unfused float32 elementwise loops compile to vector code
# (ctest kernel_loops_vectorised). Each loop marked `SIMD-CHECKED` in graph/ops_elementwise.c (on
# the line gcc reports the loop at — its `for`, or for a macro expansion the expanding line — or
# the line before it) must be reported vectorised by gcc's vectoriser, and no expansion of it (one
# per row of graph/op_math.h's FA_UNARY_MATH / FA_BINARY_MATH) left scalar by "control flow in
# loop", with the flags the project compiles the op kernels with. Why: gcc's default -ftrapping-math keeps a
# conditional multiply (HardSwish x·clamp(x/6+1/2), LeakyRelu, PRelu, Max/Min with NaN) as a
# branch, so those loops ran scalar — HardSwish 8x slower than with -fno-trapping-math
# (docs/runtime.md "Vectorised elementwise loops"); a flag dropped or an expression written in a
# form gcc cannot if-convert fails here, not silently in a profile.
# usage: check_vectorised.sh CC SOURCE_DIR BUILD_DIR FLAG...   (gcc only; another compiler: skip, 77)
set -uo pipefail
CC=$1 SRC=$2 BLD=$3
shift 3
if ! "$CC" --version 2>/dev/null | grep -i 'gcc\|free software foundation' >/dev/null; then
  echo "SKIP: $CC is not gcc (the check reads gcc's -fdump-tree-vect-details)"; exit 77
fi
file=$SRC/graph/ops_elementwise.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && "$CC" "$@" -D_GNU_SOURCE -DFA_VERSION='"0"' -I"$SRC" -I"$BLD" -c "$file" -o x.o -fdump-tree-vect-details) || {
  echo "kernel_loops_vectorised: cannot compile $file" >&2; exit 1; }
dump=$(ls "$tmp"/*vect 2>/dev/null | head -1)
[ -n "$dump" ] || { echo "kernel_loops_vectorised: no vectoriser dump" >&2; exit 1; }
problems=0 checked=0
while IFS=: read -r line _; do
  for l in "$line" $((line + 1)); do
    # gcc names a loop by its `for` line: one "loop vectorized" note per vectorised expansion,
    # "couldn't vectorize loop" per one left scalar
    ok=$(grep -c "ops_elementwise.c:$l:[0-9]*: optimized: loop vectorized" "$dump")
    bad=$(grep -c "ops_elementwise.c:$l:[0-9]*: missed: couldn't vectorize loop" "$dump")
    [ "$ok" -gt 0 ] || [ "$bad" -gt 0 ] || continue
    checked=$((checked + 1))
    # a copy of a strided loop may stay scalar for its access pattern; a branch never may
    branchy=$(grep -c "ops_elementwise.c:$l:[0-9]*: missed:   not vectorized: control flow in loop" "$dump")
    if [ "$ok" -eq 0 ] || [ "$branchy" -gt 0 ]; then
      echo "kernel_loops_vectorised: graph/ops_elementwise.c:$l: $ok expansion(s) vectorised, $branchy left scalar by a branch:" >&2
      grep "ops_elementwise.c:$l:[0-9]*: missed:   not vectorized" "$dump" | sort | uniq -c | head -5 >&2
      problems=$((problems + 1))
    fi
    break
  done
done < <(grep -n 'SIMD-CHECKED' "$file")
marked=$(grep -c 'SIMD-CHECKED' "$file")
if [ "$checked" -ne "$marked" ]; then
  echo "kernel_loops_vectorised: $marked loops marked, the vectoriser reported on $checked" >&2
  problems=$((problems + 1))
fi
[ "$problems" -eq 0 ] && echo "kernel_loops_vectorised: $checked marked loops vectorised"
exit $((problems > 0))
