#!/usr/bin/env bash
# epilogue_fast_path — issue 18: a oneDNN conv epilogue is asked which implementation oneDNN
# chose before it is benchmarked. On zoo:convnet-tiny (Conv+BN+ReLU and a residual add), every
# conv epilogue cluster is either refused with a why-not naming the implementation, or ran on an
# implementation that is neither a reference kernel nor the gemm convolution — cross-checked
# against oneDNN's own verbose log of the same run (ONEDNN_VERBOSE=1).
set -u
CLI=${FA_CLI:?FA_CLI must point at the fuse-advise binary}
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
ONEDNN_VERBOSE=1 "$CLI" run zoo:convnet-tiny --iters 3 --warmup 1 --threads 1 --db r.db --out out >log.txt 2>err.txt ||
    { cat err.txt; echo "FAIL: run exited $?"; exit 1; }
python3 - <<'PY' || exit 1
import json, sys
plan = json.load(open("out/plan.json"))
execs = [l.split(",") for l in open("log.txt") if l.startswith("onednn_verbose,exec,cpu,convolution")]
post = [e[5] for e in execs if "attr-post-ops" in ",".join(e)]
conv_epi = [c for c in plan["clusters"] if c["kind"] == "epilogue" and c["label"].startswith("conv")]
if not conv_epi:
    sys.exit("FAIL: no conv epilogue cluster proposed on convnet-tiny")
for c in conv_epi:
    r = c.get("reason") or ""
    if c["status"] == "refused" and "oneDNN chose its" in r:
        impl = r.split("'")[1]
        if not ("gemm" in impl or "ref" in impl):
            sys.exit(f"FAIL: cluster {c['id']} refused for a fast implementation {impl}: {r}")
        continue
    if c["status"] in ("accepted", "rejected-no-gain", "rejected-regression"):
        bad = [i for i in post if "gemm" in i or i.startswith("ref")]
        if bad:
            sys.exit(f"FAIL: cluster {c['id']} was benchmarked on a slow post-op implementation {bad[0]}")
print(f"ok: {len(conv_epi)} conv epilogue clusters; post-op convolutions executed on {sorted(set(post)) or 'none'}")
PY
