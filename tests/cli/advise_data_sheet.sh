#!/usr/bin/env bash
# A plan for a GPU that is not at hand (issue 40): a cpu run of zoo:gpt2-block advised with
# `--target cuda --arch sm_90` and `--arch sm_80` is estimated from each part's data sheet (the
# device table trace advice uses), not from this cpu's ceilings nor the 10 GB/s defaults:
#  - the header and --json name the part and the figures used (3350 / 2039 GB/s), "no device
#    measured", and an estimated GPU iteration;
#  - every cluster's basis says so, and the two devices give different savings;
#  - no -1 sentinel anywhere: a library cluster is named by its cuda library (cuBLASLt
#    epilogue, a BN fold), a generated kernel has the registers NVRTC reports for that arch
#    (the gate part skips without NVRTC);
#  - an unknown --arch is a usage error naming what is accepted;
#  - `run --target cuda` without a driver (or in a build without the cuda target) names the two
#    ways that need neither.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
pass=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
fail() { echo "FAIL: $*"; exit 1; }

"$FA_CLI" run zoo:gpt2-block --no-apply --target cpu --iters 1 --warmup 0 --db r.db >/dev/null
for a in sm_90 sm_80; do
    "$FA_CLI" advise latest --db r.db --target cuda --arch $a --no-gate --json >"$a.json"
    "$FA_CLI" advise latest --db r.db --target cuda --arch $a --no-gate >"$a.txt"
done
"$py" - sm_90.json sm_80.json <<'EOF' || fail "the data-sheet estimates (see above)"
import json, sys
h, a = (json.load(open(f)) for f in sys.argv[1:3])
for d, dev, bw, arch in ((h, "H100 SXM", 3350, "sm_90"), (a, "A100 80GB SXM", 2039, "sm_80")):
    e = d["estimated_for"]
    assert e and e["device"] == dev and e["arch"] == arch and e["measured"] is False and e["iter_ns"] > 0, e
    c = d["ceilings"]
    assert c["source"] == "data sheet" and abs(c["mem_bw_gbs"] - bw) < 1e-6, c
    assert d["clusters"], "no cluster planned"
    for cl in d["clusters"]:
        assert "from its data sheet, no device measured" in cl["basis"] and dev in cl["basis"], cl["basis"]
        assert "default ceilings" not in cl["basis"], cl["basis"]
    # plan.json's document (format 2): a library cluster (no compiled kernel: its registers,
    # spills and occupancy null, never -1) is named by its cuda library
    assert d["format"] == 2, d.get("format")
    lib = {x["id"]: x["library"] for x in d["libraries"]}
    libs = [lib.get(cl["id"]) for cl in d["clusters"] if cl["kind"] == "epilogue"]
    assert libs and all(libs), libs
    for cl in d["clusters"]:
        if cl["kind"] in ("epilogue", "bn-fold"):
            assert cl["registers"] is None and cl["spill_bytes"] is None and cl["occupancy"] is None, cl
        for k in ("registers", "spill_bytes", "occupancy", "anchor", "depends_on", "reduce_axis", "block_size",
                  "max_rel_error"):
            assert cl[k] is None or cl[k] >= 0, (k, cl[k], cl["label"])
    for k in ("max_ops", "max_inputs", "occupancy_floor"):
        assert d["options"][k] is None or d["options"][k] >= 0, (k, d["options"])
    assert any(l.startswith("cuBLASLt epilogue") for l in libs), libs
sh = {(c["label"], c["kind"], tuple(c["members"])): c["est_saving_ns"] for c in h["clusters"]}
sa = {(c["label"], c["kind"], tuple(c["members"])): c["est_saving_ns"] for c in a["clusters"]}
common = set(sh) & set(sa)
assert common and any(abs(sh[k] - sa[k]) > 1e-3 for k in common), "H100 and A100 estimates are the same"
assert h["estimated_for"]["iter_ns"] < a["estimated_for"]["iter_ns"], "H100's iteration not shorter than A100's"
print("H100 iteration %.1f us, A100 %.1f us" % (h["estimated_for"]["iter_ns"] / 1e3, a["estimated_for"]["iter_ns"] / 1e3))
EOF
ok "sm_90 and sm_80 plans estimated from the H100 SXM and A100 80GB SXM data sheets, with different savings"
grep -q '^target cuda sm_90: estimated for H100 SXM from its data sheet, no device measured: 3350 GB/s HBM' sm_90.txt ||
    fail "the text header does not name the data sheet's figures: $(head -2 sm_90.txt)"
grep -qE -- '(regs|spill|occ) -1' sm_90.txt sm_80.txt && fail "a -1 sentinel in the text output"
grep -q 'cuBLASLt epilogue' sm_90.txt || fail "no library epilogue named in the text output"
ok "text header names the figures used; library clusters named, no sentinel"

# the report of the cpu run shows that its newest plan is the GPU's estimate, not this run's
"$FA_CLI" report latest --db r.db -o rep >/dev/null || fail "report"
grep -q 'This plan is for <code>cuda sm_80</code>, estimated from that GPU.s data sheet with no device measured' rep/report.html ||
    fail "report.html does not say the plan is a data-sheet estimate for cuda sm_80"
ok "the report labels the plan as estimated for the GPU"

# a part by name: its own row of the table (a PCIe H100 has 2000 GB/s)
"$FA_CLI" advise latest --db r.db --target cuda --arch 'H100 PCIe' --no-gate >pcie.txt
grep -q '^target cuda sm_90: estimated for H100 PCIe from its data sheet.*2000 GB/s HBM' pcie.txt ||
    fail "--arch 'H100 PCIe' did not plan for that part"
ok "--arch takes a part's name"

set +e
"$FA_CLI" advise latest --db r.db --target cuda --arch sm_61 >out 2>err
rc=$?
set -e
[ $rc -eq 2 ] && grep -q 'sm_80, sm_86, sm_89, sm_90, sm_100' err || fail "--arch sm_61: rc $rc, $(cat err)"
ok "an unknown --arch is a usage error naming the accepted ones"

# the gate: real NVRTC figures for the arch, never a sentinel
if grep -aq "libnvrtc.so." "$FA_CLI"; then
    "$FA_CLI" advise latest --db r.db --target cuda --arch sm_80 --json >g80.json
    "$py" - g80.json <<'EOF' || fail "the sm_80 gate's figures (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
lib = {x["id"] for x in d["libraries"]}
gen = [c for c in d["clusters"] if c["kind"] in ("attention", "reduction", "elementwise-chain", "horizontal")]
assert gen, "no generated kernel to gate"
for c in gen:
    if c["status"] == "refused" and c["reason"] and "gate" in c["reason"]:
        assert "sm_80" in c["reason"], c["reason"]
        continue
    assert c["id"] not in lib and c["registers"] > 0 and 0 < c["occupancy"] <= 1, c
print("sm_80 kernels:", [(c["label"], c["registers"], c["occupancy"]) for c in gen])
EOF
    ok "generated kernels gated by NVRTC for sm_80 with real register counts"
else
    echo "skip: built without the CUDA toolkit (no NVRTC gate)"
fi

# run --target cuda without a driver names the ways that need none
if ! ldconfig -p 2>/dev/null | grep 'libcuda.so.1' >/dev/null; then
    set +e
    "$FA_CLI" run zoo:mlp-tiny --target cuda --iters 1 --db c.db >out 2>err
    rc=$?
    set -e
    [ $rc -ne 0 ] && grep -qE 'no CUDA driver|target cuda: this build has no executor' err &&
        grep -qE 'fuse-advise: (without a GPU here|in this build, without the target), two ways give GPU advice' err &&
        grep -q 'advise latest --target cuda --arch' err && grep -q 'import TRACE' err ||
        fail "run --target cuda without a driver: rc $rc, $(cat err)"
    ok "run --target cuda without a driver names advise --target cuda and import"
fi
# the hint follows the error's kind, not its words: a missing model whose name says "no CUDA
# driver" is a missing file, with no GPU hint
set +e
"$FA_CLI" run "no CUDA driver.onnx" --db c.db >out 2>err
rc=$?
set -e
[ $rc -eq 1 ] && grep -q 'no CUDA driver.onnx' err && ! grep -q 'two ways give GPU advice' err ||
    fail "a missing file named 'no CUDA driver.onnx': rc $rc, $(cat err)"
ok "the GPU hint is chosen by the error's reason, not its words"
echo "advise_data_sheet: $pass passed, 0 failed"
