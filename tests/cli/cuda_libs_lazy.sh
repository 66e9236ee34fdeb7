#!/usr/bin/env bash
# The CUDA toolkit libraries are opened only when the cuda target, NVRTC or CUPTI is used
# (runtime/cuda/toolkit.c): `--help`, inspect, zoo, a cpu run, runs and analyze open none of
# them (the loader's LD_DEBUG=files log lists every library a process opens, dlopen included),
# while the NVRTC register gate (advise --target cuda on bert-layer's generated softmax and
# layer norm kernels) does open NVRTC, which shows the check
# can see a dlopen. A build without the CUDA toolkit has nothing to load: skipped (77).
set -euo pipefail
grep -aq "libnvrtc.so." "$FA_CLI" || { echo "SKIP: built without the CUDA toolkit"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
CUDA_LIBS='lib(cudart|nvrtc|cupti|cublas|cublasLt)\.so'
ldd "$FA_CLI" | grep -E "$CUDA_LIBS" && { echo "FAIL: fuse-advise links a CUDA toolkit library"; exit 1; }
opened() { # CMD...: the CUDA toolkit libraries CMD's process opened
    LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" "$@" >/dev/null 2>&1 || true
    cat "$tmp"/ld.* 2>/dev/null | grep -oE "file=[^ ]*($CUDA_LIBS)[^ ]*" | sort -u || true
    rm -f "$tmp"/ld.*
}
for cmd in "--help" "inspect zoo:mlp-tiny" "zoo mlp-tiny -o m.onnx" "run zoo:mlp-tiny --no-apply --target cpu --iters 2 --db a.db" \
           "runs --db a.db" "analyze latest --db a.db"; do
    # shellcheck disable=SC2086
    got=$(opened "$FA_CLI" $cmd)
    [ -z "$got" ] || { echo "FAIL: '$cmd' opened: $got"; exit 1; }
    echo "ok: fuse-advise $cmd opens no CUDA library"
done
# A model whose candidates reach the NVRTC register gate: only a cluster the cost model finds
# beneficial is compiled. GPT-2's GELU chain is; BERT's decomposed LayerNorm stopped being once
# the baseline's Pow(x, 2) became a product (issue 18), so the gate never ran there.
"$FA_CLI" run zoo:gpt2-block --no-apply --target cpu --iters 1 --warmup 0 --db b.db >/dev/null
got=$(opened "$FA_CLI" advise latest --db b.db --target cuda --arch sm_90)
grep -q libnvrtc <<<"$got" || { echo "FAIL: the NVRTC gate did not open libnvrtc (got: '$got')"; exit 1; }
echo "ok: advise --target cuda opens $(echo "$got" | tr '\n' ' ')"
echo "cuda_libs_lazy: 7 passed, 0 failed"
