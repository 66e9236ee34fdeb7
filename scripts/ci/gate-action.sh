#!/usr/bin/env bash
# The composite action's script (action.yml at the repository root; docs/ci.md "The action"):
# record a model's runs with this build, gate them against the baseline database, write the
# JUnit/Markdown reports, post the Markdown as a pull-request comment, and exit with the gate's
# code (0 pass, 3 regression, 1 bad input). In mode `baseline` it records the runs into the
# baseline database instead (the main branch's job).
#
# Inputs come from the environment (action.yml maps the action's inputs onto these):
#   FA_MODEL (required)  an .onnx file or zoo:NAME
#   FA_MODE              gate (default) | baseline
#   FA_BIN               the fuse-advise binary (default: `fuse-advise` on PATH, else the build in
#                        FA_SOURCE_DIR made by its scripts/setup.sh)
#   FA_ITERS (100) FA_RUNS (3) FA_MAX_REGRESSION (3%) FA_EXTRA_RUN_ARGS ('')
#   FA_BASELINE_DB (baseline.db) FA_CANDIDATE_DB (candidate.db) FA_OUT (fuse-advise-out)
#   FA_BASELINE_TAG (main) FA_TAG (candidate tag; default pr-<number> or the commit)
#   FA_COMMENT (true|false, default true): post gate.md on the pull request with `gh pr comment`
#                        (GH_TOKEN or GITHUB_TOKEN), editing our last comment when there is one
#   GITHUB_EVENT_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY: set by GitHub Actions when present
set -uo pipefail
die() { echo "fuse-advise action: $*" >&2; exit 1; }
[ -n "${FA_MODEL:-}" ] || die "FA_MODEL (the model input of the action) is required"
mode=${FA_MODE:-gate}
case $mode in gate|baseline) ;; *) die "mode must be gate or baseline, not '$mode'";; esac
iters=${FA_ITERS:-100} runs=${FA_RUNS:-3}
[[ $iters =~ ^[1-9][0-9]*$ ]] || die "iters must be a positive integer, not '$iters'"
[[ $runs =~ ^[1-9][0-9]?$ ]] || die "runs must be 1..99, not '$runs'"
bdb=${FA_BASELINE_DB:-baseline.db} cdb=${FA_CANDIDATE_DB:-candidate.db}
out=${FA_OUT:-fuse-advise-out} btag=${FA_BASELINE_TAG:-main}

bin=${FA_BIN:-}
if [ -z "$bin" ]; then
  if command -v fuse-advise >/dev/null; then bin=fuse-advise
  else
    src=${FA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
    echo "fuse-advise action: no fuse-advise on PATH: building it from $src (install the package to skip this)"
    bash "$src/scripts/setup.sh" >/dev/null || die "building from $src failed"
    bin=$src/build/fuse-advise
  fi
fi

pr=""
if [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ]; then
  pr=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print((e.get("pull_request") or {}).get("number") or "")' \
       "$GITHUB_EVENT_PATH" 2>/dev/null || true)
fi
tag=${FA_TAG:-${pr:+pr-$pr}}
tag=${tag:-${GITHUB_SHA:-candidate}}

read -r -a extra <<<"${FA_EXTRA_RUN_ARGS:-}"
record() { # record DB TAG
  for ((i = 1; i <= runs; i++)); do
    echo "fuse-advise action: run $i of $runs: $FA_MODEL (tag $2)"
    "$bin" run "$FA_MODEL" --iters "$iters" --tag "$2" --db "$1" --out "$out" "${extra[@]}" \
      || die "run $i of $FA_MODEL failed (exit $?)"
  done
}
set_output() { [ -n "${GITHUB_OUTPUT:-}" ] && printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; return 0; }

if [ "$mode" = baseline ]; then
  rm -f "$bdb" "$bdb-wal" "$bdb-shm"
  record "$bdb" "$btag"
  set_output verdict baseline-recorded
  exit 0
fi

record "$cdb" "$tag"
if [ ! -f "$bdb" ]; then
  echo "No baseline database ($bdb) yet: nothing to gate against. The main branch's job (mode: baseline) records one." | tee gate.md
  set_output verdict no-baseline
  exit 0
fi
"$bin" gate --baseline-db "$bdb" --candidate-db "$cdb" --baseline-tag "$btag" --runs "$runs" \
  --max-regression "${FA_MAX_REGRESSION:-3%}" --junit gate.xml --markdown gate.md
rc=$?
case $rc in 0) verdict=pass ;; 3) verdict=regression ;; *) verdict=error ;; esac
set_output verdict "$verdict"
set_output exit-code "$rc"

# A GitHub comment holds at most 65,536 characters: a longer report is cut at a line with a
# pointer to the full one in the job's artifacts.
if [ -f gate.md ]; then
  limit=${FA_COMMENT_LIMIT:-60000}
  if [ "$(wc -c <gate.md)" -gt $limit ]; then
    head -c $limit gate.md | sed '$d' >gate.comment.md
    printf '\n\n_Cut at %d characters: the whole report is gate.md in this job'"'"'s artifacts._\n' $limit >>gate.comment.md
  else
    cp gate.md gate.comment.md
  fi
  [ -n "${GITHUB_STEP_SUMMARY:-}" ] && cat gate.comment.md >>"$GITHUB_STEP_SUMMARY"
  if [ "${FA_COMMENT:-true}" = true ] && [ -n "$pr" ]; then
    if command -v gh >/dev/null; then
      gh pr comment "$pr" --edit-last --body-file gate.comment.md 2>/dev/null \
        || gh pr comment "$pr" --body-file gate.comment.md \
        || echo "fuse-advise action: warning: could not post the comment (needs pull-requests: write)" >&2
    else
      echo "fuse-advise action: warning: no gh CLI on this runner: comment not posted (gate.md is in the summary)" >&2
    fi
  fi
fi
exit $rc
