#!/usr/bin/env python3
"""tests/conformance/op_attrs_vs_onnx — every op's declared attributes against ONNX's schemas.

Reads the registry's attribute lists (the dump_op_attrs helper: DOMAIN OP NAME TYPE ACCEPT
COUNT UNTIL per line) and checks them against onnx.defs.get_all_schemas_with_history() of the
installed onnx package:
  - every registered op of the ONNX domains exists in ONNX;
  - every declared attribute exists in some version of the op, with the declared type there;
  - `until` is right: 0 when the op's latest version still has the attribute, else the last
    opset before the version that dropped it;
  - every attribute of every version of the op is declared, except the few listed in
    NOT_DECLARED below, which fuse-advise refuses on purpose (with the reason given).
An attribute ONNX defines that no list declares would still be refused at load (never
ignored), but with a vaguer message; this test keeps the lists complete and free of typos.
Exit 0 ok, 1 a mismatch (each printed), 77 onnx not importable (ctest: skipped).
"""
from __future__ import annotations

import subprocess
import sys

try:
    import onnx.defs
except ImportError as e:
    print(f"SKIP: onnx not importable ({e})")
    sys.exit(77)

# (op, attribute): why it is not declared (so a model using it is refused at load).
NOT_DECLARED = {
    ("Upsample", "height_scale"): "Upsample-1's per-axis scale attributes are not implemented",
    ("Upsample", "width_scale"): "Upsample-1's per-axis scale attributes are not implemented",
    ("Constant", "sparse_value"): "sparse tensors are not supported",
    ("Constant", "value_string"): "string tensors are not supported",
    ("Constant", "value_strings"): "string tensors are not supported",
}


def main() -> int:
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
    ours: dict[tuple[str, str], dict[str, list[tuple[str, int]]]] = {}
    for ln in out.splitlines():
        dom, op, name, typ, _accept, _count, until = ln.split("\t")
        dom = "" if dom == "ai.onnx" else dom
        d = ours.setdefault((dom, op), {})
        if name != "-":
            d.setdefault(name, []).append((typ, int(until)))
    hist: dict[tuple[str, str], list] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        hist.setdefault((s.domain, s.name), []).append(s)
    problems = []
    for (dom, op), attrs in sorted(ours.items()):
        if dom not in ("", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"):
            continue  # our own domains (fused nodes) have no ONNX schema
        versions = sorted(hist.get((dom, op), []), key=lambda s: s.since_version)
        if not versions:
            problems.append(f"{op}: registered, but onnx {onnx.__version__} has no such op")
            continue
        spec_attrs: dict[str, list] = {}
        for s in versions:
            for a, v in s.attributes.items():
                spec_attrs.setdefault(a, []).append((s.since_version, str(v.type).split(".")[-1]))
        for name, decls in attrs.items():
            if name not in spec_attrs:
                problems.append(f"{op}.{name}: declared, but no version of {op} has it")
                continue
            have = spec_attrs[name]
            last_with = max(v for v, _ in have)
            later = [s.since_version for s in versions if s.since_version > last_with]
            want_until = later[0] - 1 if later else 0
            for typ, until in decls:
                if typ not in {t for _, t in have}:
                    problems.append(f"{op}.{name}: declared {typ}, ONNX has {sorted({t for _, t in have})}")
                if until != want_until:
                    problems.append(f"{op}.{name}: until = {until}, ONNX says {want_until} "
                                    f"(versions with it: {[v for v, _ in have]}, of {[s.since_version for s in versions]})")
        for name, have in spec_attrs.items():
            if name not in attrs and (op, name) not in NOT_DECLARED:
                problems.append(f"{op}.{name}: ONNX attribute ({have[0][1]}, opsets {[v for v, _ in have]}) "
                                f"not declared: declare it (accept = its default if not implemented)")
    print(f"onnx {onnx.__version__}: {len(ours)} registered ops checked, {len(problems)} problem(s)")
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
