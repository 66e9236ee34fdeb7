#!/usr/bin/env bash
# tests/cli/report_trace_chromium — the report of an imported trace (issue 22) as a user opens it:
# `fuse-advise run TRACE` on real CUDA captures from the corpus (a Kineto trace of an A100 and
# the Nsight Systems export) and on a ROCm-shaped Kineto trace of an MI300X written here (the
# corpus holds no ROCm capture: HIP kernels, hipLaunchKernel, Tensile GEMMs, Composable Kernel
# attention, the same eager PyTorch decomposition as on CUDA). Each report loads in headless
# Chromium with no console errors (a style or script its hash-only policy refuses counts as one),
# its own script runs under that policy, every section a trace can fill is in the DOM, nothing says
# "not measured" (but the launch overhead's missing latency part), full kernel names are on hover,
# and a screenshot is kept as a test artifact ($FA_BUILD_DIR/tests/artifacts/report-trace-*.png). Skips (77) without chromium or the corpus.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
BUILD=${FA_BUILD_DIR:-$(dirname "$CLI")}
CORPUS=${FA_CORPUS:-}
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || { echo "report_trace_chromium: chromium is not installed: skipped"; exit 77; }
[ -n "$CORPUS" ] && [ -d "$CORPUS/traces" ] || { echo "report_trace_chromium: corpus not found: skipped"; exit 77; }
command -v python3 >/dev/null || { echo "report_trace_chromium: python3 not found: skipped"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "report_trace_chromium: FAIL: $*" >&2; exit 1; }

# A ROCm eager Llama decoder step (2 layers): ops with Input Dims launching one kernel each.
python3 - "$tmp/rocm_llama.json" <<'EOF'
import json, sys
ev, st = [], {"ts": 1000, "gpu": 0, "corr": 1, "ext": 1}
BF = "c10::BFloat16"
def op(name, dims, types, kernel, kdur):
    ext, corr, t0 = st["ext"], st["corr"], st["ts"]
    st["ext"] += 1; st["corr"] += 1
    ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 7, "tid": 7, "ts": t0, "dur": 8,
               "args": {"External id": ext, "Input Dims": dims, "Input type": types}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 7, "tid": 7, "ts": t0 + 2, "dur": 4,
               "args": {"External id": ext, "correlation": corr}})
    ks = max(st["gpu"], t0 + 6)
    ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ks, "dur": kdur,
               "args": {"External id": ext, "device": 0, "stream": 7, "correlation": corr, "grid": [1024, 1, 1],
                        "block": [256, 1, 1]}})
    st["gpu"] = ks + kdur + 1
    st["ts"] = t0 + 10
EW = "void at::native::vectorized_elementwise_kernel<4, at::native::%s, at::detail::Array<char*, 3> >(int)"
MUL = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&)::{lambda(int)#1}>(int)"
COPY = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int)"
GEMM = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB1_AFC1_AFEM1"
FMHA = "void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::bf16_t> > >(ck_tile::FmhaFwdKernel<>::Kargs)"
X = [[1, 512, 4096], [1, 512, 4096], []]
def rmsnorm():
    op("aten::copy_", X, ["float", BF, "Scalar"], COPY, 20)
    op("aten::pow", [[1, 512, 4096], []], ["float", "Scalar"], EW % "(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#2}", 20)
    op("aten::mean", [[1, 512, 4096], [], [], []], ["float", "ScalarList", "Scalar", ""], "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float>)", 15)
    op("aten::add", [[1, 512, 1], [], []], ["float", "Scalar", "Scalar"], EW % "CUDAFunctorOnSelf_add<float>", 3)
    op("aten::rsqrt", [[1, 512, 1]], ["float"], EW % "rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(float)#1}", 3)
    op("aten::mul", [[1, 512, 4096], [1, 512, 1]], ["float", "float"], MUL, 20)
    op("aten::copy_", X, [BF, "float", "Scalar"], COPY, 20)
    op("aten::mul", [[4096], [1, 512, 4096]], [BF, BF], MUL, 12)
def linear(n):
    op("aten::linear", [[1, 512, 4096], [n, 4096], []], [BF, BF, ""], GEMM, 60)
t0 = st["ts"]
for l in range(2):
    if l: op("aten::add", X, [BF, BF, "Scalar"], EW % "CUDAFunctor_add<c10::BFloat16>", 12)
    rmsnorm(); linear(4096); linear(4096); linear(4096)
    for _ in range(2):
        op("aten::mul", [[1, 32, 512, 128], [1, 1, 512, 128]], [BF, BF], MUL, 10)
        op("aten::neg", [[1, 32, 512, 64]], [BF], EW % "neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}", 6)
        op("aten::cat", [[[1, 32, 512, 64], [1, 32, 512, 64]], []], ["TensorList", "Scalar"], "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(int)", 10)
        op("aten::mul", [[1, 32, 512, 128], [1, 1, 512, 128]], [BF, BF], MUL, 10)
        op("aten::add", [[1, 32, 512, 128], [1, 32, 512, 128], []], [BF, BF, "Scalar"], EW % "CUDAFunctor_add<c10::BFloat16>", 10)
    op("aten::_scaled_dot_product_flash_attention", [[1, 32, 512, 128]] * 3 + [[], [], []], [BF, BF, BF, "Scalar", "Scalar", "Scalar"], FMHA, 150)
    linear(4096)
    op("aten::add", X, [BF, BF, "Scalar"], EW % "CUDAFunctor_add<c10::BFloat16>", 12)
    rmsnorm(); linear(11008)
    op("aten::silu", [[1, 512, 11008]], [BF], EW % "(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}", 25)
    linear(11008)
    op("aten::mul", [[1, 512, 11008], [1, 512, 11008]], [BF, BF], MUL, 25)
    op("aten::linear", [[1, 512, 11008], [4096, 11008], []], [BF, BF, ""], GEMM, 120)
ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": t0 - 5, "dur": st["ts"] - t0 + 10})
doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992,
       "computeMajor": 9, "computeMinor": 4, "numSms": 304, "warpSize": 64}], "traceEvents": ev}
json.dump(doc, open(sys.argv[1], "w"))
EOF

chrome() { # chrome LOGFILE ARGS...: headless, no network, console messages on stderr
  local log=$1; shift
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --no-first-run --disable-extensions --disable-sync --user-data-dir="$tmp/profile" \
    --enable-logging=stderr --v=0 --log-level=0 "$@" 2>"$log"
}
console_errors() { grep -E 'Uncaught|ERROR:CONSOLE|:CONSOLE\(.*(Error|error)|violates the following Content Security Policy' "$1"; }

printf '<!DOCTYPE html><html><body><p>canary</p><script>fa_no_such_function();</script></body></html>' >"$tmp/canary.html"
chrome "$tmp/canary.log" --dump-dom "file://$tmp/canary.html" >/dev/null
console_errors "$tmp/canary.log" >/dev/null || { cat "$tmp/canary.log"; fail "console error detection does not work (canary not seen)"; }

mkdir -p "$BUILD/tests/artifacts"
check() { # check NAME TRACE ROOFLINE(yes|no)
  local name=$1 trace=$2 roof=$3 out="$tmp/out-$1"
  "$CLI" run "$trace" --db "$tmp/$name.db" --out "$out" >"$tmp/$name.run" 2>&1 || { cat "$tmp/$name.run"; fail "$name: run failed"; }
  for f in report.html trace.json summary.json kernels.csv; do [ -s "$out/$f" ] || fail "$name: $f missing or empty"; done
  if grep -Eq '(src|href)="https?:' "$out/report.html"; then fail "$name: report.html references the network"; fi
  # (a shown figure's missing part says so: the launch overhead without its device launch latency
  # on a trace where no kernel was queued, as the nsys export is)
  if sed 's/device launch latency not measured//g' "$out/report.html" | grep -q 'not measured'; then
    fail "$name: a card or section says 'not measured'"
  fi
  chrome "$tmp/$name.log" --dump-dom "file://$out/report.html" >"$tmp/$name.dom" || { cat "$tmp/$name.log"; fail "$name: chromium failed"; }
  if console_errors "$tmp/$name.log"; then fail "$name: console errors while loading report.html"; fi
  # the page's policy lists its script and stylesheet by hash, never 'unsafe-inline', and the script runs
  grep -q "script-src 'sha256-" "$out/report.html" || fail "$name: the policy does not list the script by its hash"
  if grep -q "unsafe-inline" "$out/report.html"; then fail "$name: the policy allows inline scripts or styles"; fi
  grep -q '<html lang="en" class="js">' "$tmp/$name.dom" || fail "$name: the report's script did not run under its policy"
  for id in summary opportunities whatif streams classes launch gaps roofline kernels; do
    grep -q "<section id=\"$id\"" "$tmp/$name.dom" || fail "$name: section $id missing"
  done
  for svg in whatif-svg streams-svg classes-svg; do grep -q "<svg id=\"$svg\"" "$tmp/$name.dom" || fail "$name: $svg missing"; done
  if [ "$roof" = yes ]; then grep -q '<svg id="trace-roofline-svg"' "$tmp/$name.dom" || fail "$name: roofline has no point"; fi
  grep -q '<span title="void ' "$tmp/$name.dom" || grep -q '<span title="' "$tmp/$name.dom" || fail "$name: no full kernel name on hover"
  # the CSV holds every kernel's full name next to its short one
  head -1 "$out/kernels.csv" | grep '^short_name,name,full_name,' >/dev/null || fail "$name: kernels.csv header"
  python3 - "$out/summary.json" <<'EOF' || fail "$name: summary.json"
import json, sys
d = json.load(open(sys.argv[1]))
a = d["advice"]
assert a["kernels"] > 0 and a["window"], a.keys()
total = sum(o["saving_ns"] for o in a["opportunities"])
assert total <= a["saving_ns"] + 1 and a["saving_ns"] <= a["saving_kernel_ns"] + a["idle_ns"] + 1
EOF
  local shot="$BUILD/tests/artifacts/report-trace-$name.png"
  rm -f "$shot"
  chrome "$tmp/$name.shot.log" --hide-scrollbars --window-size=1280,2600 --screenshot="$shot" "file://$out/report.html" >/dev/null
  [ -s "$shot" ] || { cat "$tmp/$name.shot.log"; fail "$name: no screenshot"; }
  cp "$out/report.html" "$BUILD/tests/artifacts/report-trace-$name.html"
  echo "report_trace_chromium: $name ok; screenshot $shot"
}

check cuda-a100 "$CORPUS/traces/kineto/hta/trace_diff__control__control.json.gz" yes
check cuda-nsys "$CORPUS/traces/nsys/perlmutter-cloverleaf-cuda.sqlite" no
check rocm-mi300x "$tmp/rocm_llama.json" yes
# the ROCm trace's decompositions are named as on CUDA
grep -q 'residual add + RMSNorm' "$tmp/out-rocm-mi300x/report.html" || fail "rocm: residual add + RMSNorm not named"
grep -q 'rotary embedding' "$tmp/out-rocm-mi300x/report.html" || fail "rocm: rotary embedding not named"
grep -q 'MI300X data sheet' "$tmp/out-rocm-mi300x/report.html" || fail "rocm: theoretical roofs of the MI300X"
echo "report_trace_chromium: all checks passed"
