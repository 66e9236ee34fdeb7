#!/usr/bin/env bash
# Make the man page fuse-advise.1 from the binary's own help: help2man over `fuse-advise --help`
# and `--version`, with a VERBS section holding every verb's `VERB --help` as the binary prints
# it (so the page lists exactly the verbs and options the binary parses), plus exit status,
# environment and files. Used by the build (CMakeLists.txt, target fa_man) when help2man is found.
#   bash scripts/man.sh BUILD/fuse-advise OUT.1
set -euo pipefail
bin=$1 out=$2
inc=$(mktemp); trap 'rm -f "$inc"' EXIT
# verbs: the indented names under "verbs:" in the top-level help
mapfile -t verbs < <("$bin" --help | awk '/^verbs:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {exit}')
[ ${#verbs[@]} -gt 0 ] || { echo "man.sh: no verbs in '$bin --help'" >&2; exit 1; }
{
  echo "[VERBS]"
  for v in "${verbs[@]}"; do
    printf '.SS %s\n.nf\n' "$v"
    # roff: a leading dot or quote starts a request; backslashes are escapes
    "$bin" "$v" --help 2>&1 | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    printf '.fi\n'
  done
  cat <<'ROFF'
[EXIT STATUS]
.TP
.B 0
success (a gate that passed, or was inconclusive without \-\-strict)
.TP
.B 1
bad input or run failure; the message names the file and the node, field or byte offset
.TP
.B 2
usage error
.TP
.B 3
gate failure (a regression)
[ENVIRONMENT]
.TP
.B FUSE_ADVISE_DB
the run database when \-\-db is not given (a file, or a postgresql:// URI without a password)
.TP
.B PGPASSWORD, PGPASSFILE, PGSSLROOTCERT
read by libpq for a PostgreSQL run store
.TP
.B XDG_CACHE_HOME
the compiled-kernel cache is $XDG_CACHE_HOME/fuse-advise (else ~/.cache/fuse-advise)
.TP
.B CC
the C compiler for generated kernels (default cc)
.TP
.B FA_CUPTI_INJECTION
the CUPTI tracer library for the trace verb (default: installed beside the binary's lib folder)
[FILES]
.TP
.I ./fuse-advise.db
the default run database
.TP
.I ./fuse-advise-out/MODEL/
report.html, graph.svg, trace.json, plan.json, summary.json, kernels.csv, model.folded.onnx
[SEE ALSO]
The documentation installed in /usr/share/doc/fuse-advise (cli.md, ci.md, fusion-rules.md).
ROFF
} >"$inc"
help2man --no-info --no-discard-stderr --name "profiling-driven operator-fusion advisor" \
  --include "$inc" --output "$out" "$bin"
