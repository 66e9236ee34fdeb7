#!/bin/bash
# tests/cli/module_order.sh — the layering of DESIGN.md and docs/architecture.md: a module includes
# only its own headers and those of the modules before it,
#   core → graph → runtime → collector → plan → store → roofline → analyzer → trace → codegen → advisor →
#   applier → gate → reports → cli
# Every '#include "MODULE/..."' in every .c/.h of every module folder is checked; a violation is
# printed as FILE:LINE and the test fails. Needs only the source tree (FA_SOURCE_DIR).
set -u
root="${FA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
order=(core graph runtime collector plan store roofline analyzer trace codegen advisor applier gate reports cli)
declare -A rank
for i in "${!order[@]}"; do rank[${order[$i]}]=$i; done
bad=0 checked=0
for m in "${order[@]}"; do
  [ -d "$root/$m" ] || continue
  while IFS= read -r -d '' f; do
    while IFS=: read -r line inc; do
      dep=${inc%%/*}
      [ "$dep" = "$inc" ] && continue        # "x.h": the module's own folder
      [ -n "${rank[$dep]+x}" ] || continue   # a folder that is no module (a generated header)
      checked=$((checked + 1))
      if [ "${rank[$dep]}" -gt "${rank[$m]}" ]; then
        echo "${f#"$root"/}:$line: module $m includes \"$inc\", but $dep comes after $m"
        bad=$((bad + 1))
      fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
             sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1:\2/')
  done < <(find "$root/$m" -name '*.[ch]' -print0)
done
echo "module order: $checked cross-module includes checked, $bad against the order"
[ "$checked" -gt 0 ] || { echo "no includes found under $root"; exit 1; }
[ "$bad" -eq 0 ]
