#!/usr/bin/env bash
# ci_action — the composite action's script (scripts/ci/gate-action.sh, action.yml) as GitHub runs
# it, with a stub `gh` on PATH: baseline mode records the baseline database; gate mode with no
# baseline says so and passes; gate mode runs, gates, writes gate.xml/gate.md, the step summary and
# the `verdict` output, tags the runs pr-<number> from the event, and posts the comment for that
# pull request (cut to FA_COMMENT_LIMIT with a pointer to the artifact); a gate error (runs of two
# different models) is the script's exit code; a bad input is refused before anything runs.
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
SRC=${FA_SOURCE_DIR:?FA_SOURCE_DIR must point at the source tree}
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; for f in out.txt err.txt gh.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
mkdir bin
cat >bin/gh <<'GH'
#!/usr/bin/env bash
echo "gh $*" >>"$GH_LOG"
for a in "$@"; do [ "$prev" = --body-file ] && cp "$a" "$GH_LOG.body"; prev=$a; done
exit 0
GH
chmod +x bin/gh
echo '{"pull_request": {"number": 7}}' >event.json
export PATH="$T/bin:$PATH" GH_LOG=$T/gh.log GITHUB_EVENT_PATH=$T/event.json
# --no-apply: the plans are the advisor's, the same in every run; an applied plan's end-to-end back-off
# on a 2 us model can drop a cluster in one run and not the other, which the gate rightly calls a
# lost fusion — a verdict of the machine, not of the action this test checks
export FA_BIN=$CLI FA_ITERS=5 FA_RUNS=1 FA_TRACE_SPAN_S=0 FA_EXTRA_RUN_ARGS=--no-apply
action() { bash "$SRC/scripts/ci/gate-action.sh" >out.txt 2>err.txt; }

# baseline mode
: >gh_out; GITHUB_OUTPUT=$T/gh_out FA_MODE=baseline FA_MODEL=zoo:mlp-tiny action || fail "baseline mode exit $?"
grep -qx 'verdict=baseline-recorded' gh_out || fail "baseline mode: no verdict output"
[ -s baseline.db ] || fail "baseline mode wrote no baseline.db"

# gate mode without a baseline database
: >gh_out; GITHUB_OUTPUT=$T/gh_out FA_BASELINE_DB=absent.db FA_CANDIDATE_DB=c0.db FA_MODEL=zoo:mlp-tiny action \
  || fail "gate without a baseline: exit $?"
grep -qx 'verdict=no-baseline' gh_out || fail "gate without a baseline: verdict"

# gate mode: a threshold no A/A pair can cross, so the verdict is decided by the code, not the machine
: >gh_out; : >summary.md; rm -f gh.log
GITHUB_OUTPUT=$T/gh_out GITHUB_STEP_SUMMARY=$T/summary.md FA_MAX_REGRESSION=1000% FA_MODEL=zoo:mlp-tiny action \
  || fail "gate mode: exit $?"
grep -qx 'verdict=pass' gh_out || fail "gate mode: verdict output"
grep -qx 'exit-code=0' gh_out || fail "gate mode: exit-code output"
[ -s gate.xml ] && [ -s gate.md ] || fail "gate mode: no gate.xml/gate.md"
grep -q 'PASS\|pass' summary.md || fail "gate mode: step summary lacks the report"
grep -q '^gh pr comment 7 ' gh.log || fail "gate mode: no comment posted on pull request 7"
cmp -s gh.log.body gate.md || fail "gate mode: the comment is not gate.md"
"$CLI" runs --db candidate.db --json >runs.json || fail "runs --json"
python3 -c 'import json,sys; r=json.load(open("runs.json")); r=r.get("runs", r); sys.exit(0 if any(x.get("tag")=="pr-7" for x in r) else 1)' \
  || fail "the candidate's runs are not tagged pr-7"

# a comment over the limit is cut with a pointer
rm -f gh.log; FA_COMMENT_LIMIT=300 FA_MAX_REGRESSION=1000% FA_CANDIDATE_DB=c2.db FA_MODEL=zoo:mlp-tiny action \
  || fail "cut comment: exit $?"
[ "$(wc -c <gh.log.body)" -lt 500 ] || fail "the comment was not cut to the limit"
grep -q "whole report is gate.md" gh.log.body || fail "the cut comment has no pointer to the artifact"

# a gate error is the script's exit code: the baseline is another model
: >gh_out; GITHUB_OUTPUT=$T/gh_out FA_CANDIDATE_DB=c3.db FA_MODEL=zoo:convnet-tiny FA_COMMENT=false action
rc=$?
[ $rc = 1 ] || fail "gate of two models: exit $rc, expected 1"
grep -qx 'verdict=error' gh_out || fail "gate of two models: verdict output"

# bad inputs are refused before any run
FA_ITERS=abc FA_MODEL=zoo:mlp-tiny action; [ $? = 1 ] || fail "iters=abc accepted"
grep -q "iters must be a positive integer" err.txt || fail "iters=abc: no message"
FA_MODE=deploy FA_MODEL=zoo:mlp-tiny action; [ $? = 1 ] || fail "mode=deploy accepted"
echo "ok"
