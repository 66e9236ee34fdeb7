#!/usr/bin/env bash
# tests/source/check_sources — source-layout rules, checked on every test run (ctest source_layout):
#  1. layering (DESIGN.md "Layout"): a module includes only its own headers and those of the
#     modules before it in LAYERS below; cli/ may include every module; tests/, bench/ and fuzz/
#     are not modules and are not checked;
#  2. include guards: every module header opens with `#ifndef G` / `#define G` and ends with the
#     `#endif` that closes it, with nothing but comments after it (a declaration after the guard
#     is seen twice when the header is included twice: a struct or enum there fails to compile).
#  3. a closed store (issue 17): only store/ talks to the run database: no other module includes
#     <sqlite3.h> or store/store-impl.h (collector/import/nsys.c reads an Nsight Systems *trace*
#     file with SQLite, not the run database, and is the one exception);
#  4. a header whose file name two modules share (advisor/gate.h and gate/gate.h) is included
#     with its module ("advisor/gate.h"), never bare ("gate.h" reaches whichever the include path
#     finds first);
# usage: check_sources.sh [SOURCE_DIR]   (default FA_SOURCE_DIR, else the repository root)
set -uo pipefail
SRC=${1:-${FA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}}
# The module order, first to last. A module not present yet is skipped.
LAYERS="core graph runtime collector plan store roofline analyzer trace codegen advisor applier gate reports cli"

rank_of() { local i=0 m; for m in $LAYERS; do [ "$m" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo -1; }

problems=0
report() { echo "source_layout: $*" >&2; problems=$((problems + 1)); }

# header file names found in more than one module (rule 4)
shared_names=" $(for m in $LAYERS; do [ -d "$SRC/$m" ] && find "$SRC/$m" -type f -name '*.h' -printf '%f\n'; done | sort | uniq -d | tr '\n' ' ')"

for mod in $LAYERS; do
  [ -d "$SRC/$mod" ] || continue
  rank=$(rank_of "$mod")
  while IFS= read -r -d '' file; do
    rel=${file#"$SRC"/}
    # 1. includes of another module: "mod/..." or "../mod/..."
    if [ "$mod" != cli ]; then
      while IFS= read -r dep; do
        dr=$(rank_of "$dep")
        [ "$dr" -gt "$rank" ] && report "$rel includes $dep/ (module '$dep' comes after '$mod': $LAYERS)"
      done < <(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(\.\./\)*\([A-Za-z0-9_]*\)/.*|\2|p' "$file" | sort -u)
    fi
    # 4. a shared header name included bare
    while IFS= read -r name; do
      case "$shared_names" in *" $name "*) report "$rel includes \"$name\" bare: two modules have a $name (write it with its module)" ;; esac
    done < <(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([A-Za-z0-9_.-]*\.h\)".*|\1|p' "$file" | sort -u)
    # 3. closed store
    if [ "$mod" != store ] && [ "$rel" != collector/import/nsys.c ] &&
       grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*(<sqlite3\.h>|"(\.\./)*store/store-impl\.h")' "$file"; then
      report "$rel uses SQLite or store-impl.h: every statement on the run database lives in store/ (store/store.h)"
    fi
    # 2. include guard
    case "$file" in *.h) ;; *) continue ;; esac
    msg=$(awk '
      BEGIN { state = 0; incomment = 0 }
      {
        line = $0
        # strip comments, block comments may span lines
        out = ""
        while (length(line) > 0) {
          if (incomment) {
            e = index(line, "*/")
            if (e == 0) { line = ""; break }
            line = substr(line, e + 2); incomment = 0
          } else {
            b = index(line, "/*"); s = index(line, "//")
            if (s > 0 && (b == 0 || s < b)) { out = out substr(line, 1, s - 1); line = ""; break }
            if (b == 0) { out = out line; line = ""; break }
            out = out substr(line, 1, b - 1); line = substr(line, b + 2); incomment = 1
          }
        }
        gsub(/^[ \t]+|[ \t]+$/, "", out)
        if (out == "") next
        if (state == 0) {
          if (out ~ /^#[ \t]*ifndef[ \t]+[A-Za-z0-9_]+$/) { split(out, w, /[ \t]+/); guard = w[2]; state = 1; next }
          print "code before the include guard: " out; exit
        }
        if (state == 1) {
          if (out ~ ("^#[ \t]*define[ \t]+" guard "$")) { state = 2; depth = 0; closed = 0; next }
          print "#ifndef " guard " is not followed by #define " guard; exit
        }
        # state 2: track #if nesting; the guard closes when depth returns below 0
        if (closed) { print "code after the include guard'\''s #endif: " out; exit }
        if (out ~ /^#[ \t]*if/) depth++
        else if (out ~ /^#[ \t]*endif/) { if (depth == 0) closed = 1; else depth-- }
      }
      END { if (state == 2 && !closed) print "the include guard is never closed" }
    ' "$file")
    [ -n "$msg" ] && report "$rel: $msg"
  done < <(find "$SRC/$mod" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
done

if [ "$problems" -gt 0 ]; then
  echo "source_layout: $problems problem(s)" >&2
  exit 1
fi
echo "source_layout: layering, include guards, the closed store and module-qualified shared header names OK"
