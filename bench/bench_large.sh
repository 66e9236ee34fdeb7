#!/usr/bin/env bash
# bench/bench_large.sh — full-size models (issue 39): peak memory against the weights' size for
# `inspect`, `exec` and `run`, and `run`'s wall time at twice the depth.
#
# The models are made from Hugging Face configs with random weights by bench/large_models.py
# (torch + transformers, bench only): BERT-base, GPT-2 small, GPT-2 small at 24 layers and a
# GPT-2 large-config decoder (774M parameters, 3.1 GB fp32, external data). Each verb runs in a
# process of its own under GNU time; per model and verb one line:
#
#   MODEL VERB wall_s peak_rss_MB weights_MB rss/weights
#
# then, for the pair DEPTH_PAIR (12 and 24 layers of the same blocks), DEPTH_ROUNDS alternated
# `run`s of each and the ratio of their median wall times. Each `run` has a database of its own,
# so each measures the machine's ceilings (~0.4 s, the same at both depths); with one database
# kept between runs that fixed part goes and the ratio is higher. A line before the medians gives
# the end-to-end rounds each `run` took (5 per block of --iters, until the verdict is established;
# each round runs the model twice, so they are the largest part of the wall time that moves), "bN"
# after them when N clusters were backed off and the fused model measured again. Targets (issue 39): run peak RSS <= 2x the weights, inspect/exec <= 1.2x, run at 24
# layers <= 1.3x the wall time at 12. Peak RSS is the kernel's high-water mark of the process
# (anonymous + file-backed pages mapped in: a weight read in place from the mapped file counts
# once its pages are touched). Wall times mean something only on a quiet machine.
#
# env: BUILD (default build), TORCH_PY (python with torch, transformers and onnx; default
#      python3 on PATH), MODELS ("bert-base gpt2-small gpt2-24 gpt2-large"; the smoke test:
#      "gpt2-tiny gpt2-tiny-x2 gpt2-tiny-ext"; "" for none), DEPTH_PAIR ("gpt2-small gpt2-24"; "" for
#      none),
#      MODEL_DIR (where the models are written and kept; default $TMPDIR/fa-large: gpt2-large
#      needs 3.1 GB of disk and ~10 GB of memory to export), THREADS (2), ITERS (run --iters, 5),
#      APPLY_BUDGET (run --apply-budget, 600), VERBS ("inspect exec run"), DEPTH_ROUNDS (3: the
#      pair's `run`s, alternated, for medians and their range).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
FA=$BUILD/fuse-advise
TORCH_PY=${TORCH_PY:-python3}
MODELS=${MODELS-"bert-base gpt2-small gpt2-24 gpt2-large"}
DEPTH_PAIR=${DEPTH_PAIR-"gpt2-small gpt2-24"}
MODEL_DIR=${MODEL_DIR:-${TMPDIR:-/tmp}/fa-large}
THREADS=${THREADS:-2}
ITERS=${ITERS:-5}
APPLY_BUDGET=${APPLY_BUDGET:-600}
VERBS=${VERBS:-"inspect exec run"}
DEPTH_ROUNDS=${DEPTH_ROUNDS:-3}
[ -x "$FA" ] || { echo "bench_large: $FA not built" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench_large: needs GNU time (/usr/bin/time; Debian package time)" >&2; exit 1; }
"$TORCH_PY" -c "import torch, transformers, onnx" 2>/dev/null ||
  { echo "bench_large: $TORCH_PY lacks torch, transformers or onnx (set TORCH_PY)" >&2; exit 1; }
mkdir -p "$MODEL_DIR"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

declare -A PATH_OF=() BYTES_OF=() RUN_WALL=() RUN_ROUNDS=()
# one model at a time: gpt2-large's export alone needs ~10 GB
for m in $MODELS $DEPTH_PAIR; do
  [ -z "${PATH_OF[$m]:-}" ] || continue
  "$TORCH_PY" "$here/bench/large_models.py" "$MODEL_DIR" "$m" > "$tmp/make-$m.out" 2> "$tmp/make-$m.err" ||
    { echo "bench_large: could not make $m:" >&2; tail -n 5 "$tmp/make-$m.err" >&2; exit 1; }
  read -r name path bytes < <(tail -n 1 "$tmp/make-$m.out")
  [ "$name" = "$m" ] && [ -f "$path" ] || { echo "bench_large: could not make $m" >&2; exit 1; }
  PATH_OF[$m]=$path; BYTES_OF[$m]=$bytes
  # the model's files read once before anything is timed, so the first timed verb finds them in
  # the page cache as every later one does (a cold read of bert-24's 775 MB doubled one run)
  find "$(dirname "$path")" -maxdepth 1 -type f -exec cat {} + > /dev/null
done

measure() { # measure MODEL VERB -> one line; RUN_WALL[MODEL] for run
  local m=$1 verb=$2 path=${PATH_OF[$1]} out=$tmp/$1-$2 args
  rm -rf "$out"; mkdir -p "$out"
  case $verb in
    inspect) args=(inspect "$path") ;;
    exec) args=(exec "$path" --outputs "$out/outputs" --threads "$THREADS") ;;
    run) args=(run "$path" --iters "$ITERS" --threads "$THREADS" --db "$out/run.db" --out "$out/out"
               --apply-budget "$APPLY_BUDGET") ;;
  esac
  if ! /usr/bin/time -f "%e %M" -o "$out/time" "$FA" "${args[@]}" > "$out/stdout" 2> "$out/stderr"; then
    echo "bench_large: $m $verb failed:" >&2; tail -n 5 "$out/stderr" >&2; return 1
  fi
  local wall kb
  read -r wall kb < <(tail -n 1 "$out/time")
  [ "$verb" != run ] || RUN_WALL[$m]=$wall
  # the end-to-end rounds the run took (its largest variable part: each runs the model twice)
  # (and "bN" when N accepted clusters were backed off: the fused model then measured again)
  if [ "$verb" = run ]; then
    RUN_ROUNDS[$m]=$(grep -o 'medians of [0-9]* interleaved' "$out/stdout" | head -n 1 | awk '{print $3}' || true)
    local bo; bo=$(grep -o 'end-to-end back-off: [0-9]*' "$out/stdout" | awk '{print $3}' || true)
    [ -z "$bo" ] || RUN_ROUNDS[$m]="${RUN_ROUNDS[$m]}b$bo"
  fi
  awk -v m="$m" -v v="$verb" -v w="$wall" -v kb="$kb" -v b="${BYTES_OF[$m]}" \
    'BEGIN { printf "%-14s %-8s %8.1f %10.0f %10.0f %8.2f\n", m, v, w, kb / 1024, b / 1048576, kb * 1024 / b }'
}

echo "# $(date -u +%FT%TZ) $(uname -m) threads=$THREADS iters=$ITERS load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-14s %-8s %8s %10s %10s %8s\n" model verb wall_s peak_MB weights_MB ratio
for m in $MODELS; do
  for verb in $VERBS; do measure "$m" "$verb"; done
done
if [ -n "$DEPTH_PAIR" ]; then
  # DEPTH_ROUNDS rounds, the two models alternated (a `run` that needs a second block of end-to-end
  # rounds takes ~25 % longer: one sample each says little); medians, the range, their ratio
  read -r a b <<< "$DEPTH_PAIR"
  wa_all=() wb_all=() ra_all=() rb_all=()
  for r in $(seq "$DEPTH_ROUNDS"); do
    measure "$a" run > /dev/null; wa_all+=("${RUN_WALL[$a]}"); ra_all+=("${RUN_ROUNDS[$a]:-?}")
    measure "$b" run > /dev/null; wb_all+=("${RUN_WALL[$b]}"); rb_all+=("${RUN_ROUNDS[$b]:-?}")
  done
  echo "end-to-end rounds per run: $a ${ra_all[*]}, $b ${rb_all[*]}"
  awk -v a="$a" -v b="$b" -v wa="${wa_all[*]}" -v wb="${wb_all[*]}" '
    function med(s, v, n, i, j, t) { n = split(s, v, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                                        if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
                                      lo = v[1]; hi = v[n]; return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    BEGIN { ma = med(wa); la = lo; ha = hi; mb = med(wb); lb = lo; hb = hi
            printf "run wall, %d rounds alternated: %s %s s, %s %s s\n", split(wa, x, " "), a, wa, b, wb
            printf "run wall %s / %s: median %.2f s / %.2f s = %.2f (range %.1f-%.1f s / %.1f-%.1f s)\n",
                   b, a, mb, ma, mb / ma, lb, hb, la, ha }'
fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
