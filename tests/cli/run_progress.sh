#!/usr/bin/env bash
# tests/cli/run_progress — progress where people look (issue 37: piped, `run` printed nothing for
# 31 s; on a terminal the denominator grew, "8/9 ... 58/59"): with CI=true, or --progress, `run`
# writes stage lines to stderr (the baseline's warm-up and timed iterations, ceilings, analysis,
# plan, verify, apply, e2e, reports), plain lines without carriage returns, each step's
# denominator the same on every line, also while --trace-span extends the timed iterations;
# nothing without them (stderr not a terminal) or with --no-progress; stdout unchanged.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
PY=${FA_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "run_progress: FAIL: $*" >&2; exit 1; }

# stable FILE STEP...: every step named has lines, and all "STEP d/t" lines of a step share t
stable() {
  "$PY" - "$@" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
if "\r" in text: sys.exit("a carriage return in a log")
for step in sys.argv[2:]:
    lines = [l for l in text.splitlines() if l.startswith(f"fuse-advise: {step} ")]
    if not lines: sys.exit(f"no line for step {step!r}")
    totals = {int(m.group(1)) for l in lines for m in [re.search(r"\d+/(\d+)", l)] if m}
    if len(totals) > 1: sys.exit(f"step {step!r}: denominators {sorted(totals)}")
EOF
}

export FA_TRACE_SPAN_S=0
CI=true "$CLI" run zoo:mlp-tiny --iters 8 --db p.db --out out >out.txt 2>err.txt || { cat out.txt err.txt; fail "run"; }
stable err.txt warm-up timed ceilings analysis plan e2e reports || { cat err.txt; fail "CI=true: stage lines"; }
grep -q "^fuse-advise: " out.txt && fail "progress on stdout"
grep -q '^End to end: ' out.txt || { cat out.txt; fail "stdout lost its verdict"; }

env -u CI "$CLI" run zoo:mlp-tiny --iters 3 --no-apply --db p.db >out.txt 2>err.txt || { cat err.txt; fail "run --no-apply"; }
grep -q "^fuse-advise: " err.txt && { cat err.txt; fail "progress lines without CI=true or --progress on a pipe"; }
CI=true "$CLI" run zoo:mlp-tiny --iters 3 --no-apply --no-progress --db p.db >out.txt 2>err.txt || fail "run --no-progress"
grep -q "^fuse-advise: " err.txt && { cat err.txt; fail "progress lines with --no-progress"; }

# --trace-span extends the timed iterations: the denominator stays what it was
FA_TRACE_SPAN_S=0.3 env -u CI "$CLI" run zoo:mlp-tiny --iters 3 --no-apply --progress --db p.db >out.txt 2>err.txt ||
  { cat err.txt; fail "run --progress"; }
stable err.txt timed || { cat err.txt; fail "--progress with a span: the denominator moved"; }
echo "run_progress: ok"
