#!/usr/bin/env bash
# tests/cli/layout_choice — the fused plan's layout (issue 35): `--layout NAME` overrides the
# measurement, is said so in run's answer, plan.json and report.html, and is the layout the fused
# model ran in (its reorder kernels in trace.json); FA_BLOCKED_LAYOUT overrides it as well and is
# named; a bad name is a usage error; `apply` of the stored run keeps the stored layout; a model
# without convolutions has nothing to choose. No timing is asserted.
set -uo pipefail

CLI=${FA_CLI:?FA_CLI not set (run through ctest)}
PY=${FA_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "layout_choice: FAIL: $*" >&2; exit 1; }
export FA_TRACE_SPAN_S=0
unset FA_BLOCKED_LAYOUT

# a name that is no layout: a usage error naming the choices, nothing run
"$CLI" run zoo:convnet-tiny --layout nChw32c --db bad.db --out bad >bad.out 2>bad.err
rc=$?
[ "$rc" -eq 2 ] || { cat bad.out bad.err; fail "--layout nChw32c: exit $rc, want 2"; }
grep -q "auto, nhwc, nChw8c, nChw16c or plain" bad.err || { cat bad.err; fail "the usage error does not name the layouts"; }
[ ! -e bad.db ] || fail "--layout nChw32c still created a run database"

# a layout the target cannot run convolutions on (no oneDNN: none): refused before anything runs
FA_NO_DNNL=1 "$CLI" run zoo:convnet-tiny --layout nhwc --db none.db --out none >none.out 2>none.err
rc=$?
[ "$rc" -eq 2 ] || { cat none.out none.err; fail "--layout nhwc without oneDNN: exit $rc, want 2"; }
grep -q "cannot run convolutions on it" none.err || { cat none.err; fail "the refusal does not say why"; }
[ ! -e none.db ] || fail "--layout nhwc without oneDNN still created a run database"

# --layout nChw8c: named, stored, shown, and run
"$CLI" run zoo:convnet-tiny --iters 3 --layout nChw8c --db fa.db --out out >run.txt 2>run.err ||
  { cat run.txt run.err; fail "run --layout nChw8c failed"; }
"$CLI" apply latest --iters 3 --db fa.db --out out2 >apply.txt 2>apply.err ||
  { cat apply.txt apply.err; fail "apply (the stored layout) failed"; }
FA_BLOCKED_LAYOUT=nhwc "$CLI" run zoo:convnet-tiny --iters 3 --db env.db --out env >env.txt 2>env.err ||
  { cat env.txt env.err; fail "run with FA_BLOCKED_LAYOUT=nhwc failed"; }
"$CLI" run zoo:mlp-tiny --iters 3 --db mlp.db --out mlp >mlp.txt 2>mlp.err ||
  { cat mlp.txt mlp.err; fail "run zoo:mlp-tiny failed"; }

"$PY" - <<'EOF' || fail "(above)"
import html, json, re, sys
bad = []
def sentence(path):
    m = re.search(r"^(plan layout [^\n]*)$", open(path).read(), re.M)
    return m.group(1) if m else None
def report_sentence(path):
    m = re.search(r'data-figure="plan.layout">([^<]*)<', open(path).read())
    return html.unescape(m.group(1)).rstrip(".") if m else None
def layout(d):
    return json.load(open(d + "/plan.json")).get("layout")

for txt, d, want, src, words in [("run.txt", "out", "nChw8c", "option", "named by --layout"),
                                 ("apply.txt", "out2", "nChw8c", "option", "named by --layout"),
                                 ("env.txt", "env", "nhwc", "env", "named by FA_BLOCKED_LAYOUT"),
                                 ("mlp.txt", "mlp", None, "default", "the default (nothing to choose")]:
    s, r, l = sentence(txt), report_sentence(d + "/report.html"), layout(d)
    if not l: bad.append(f"{d}/plan.json has no layout"); continue
    if l["source"] != src: bad.append(f"{d}/plan.json layout source {l['source']!r}, want {src!r}")
    if want and l["layout"] != want: bad.append(f"{d}/plan.json layout {l['layout']!r}, want {want!r}")
    if l["rounds"] is not None: bad.append(f"{d}/plan.json: {src} layout has measured rounds {l['rounds']}")
    if not s or words not in s: bad.append(f"{txt}: no sentence saying {words!r}: {s!r}")
    if s != r: bad.append(f"{txt} and {d}/report.html disagree: {s!r} vs {r!r}")
    if s and not s.startswith("plan layout " + l["layout"] + ","): bad.append(f"{txt} names another layout than plan.json: {s!r}")

# the fused model ran in the named layout: its reorders are to and from it, never the default's
for d, want in [("out", "nChw8c"), ("env", "nhwc")]:
    tr = open(d + "/trace.json").read()
    dropped = "blocked layouts were dropped" in open({"out": "run.txt", "env": "env.txt"}[d]).read()
    others = {"nChw8c", "nChw16c"} - {want}
    if not dropped and f"reorder({want}>nchw)" not in tr:
        bad.append(f"{d}/trace.json: the fused model has no reorder({want}>nchw)")
    for o in others:
        if f"reorder({o}>" in tr or f">{o})" in tr: bad.append(f"{d}/trace.json: a reorder to or from {o}, not {want}")
if bad:
    print("\n".join(bad), file=sys.stderr); sys.exit(1)
EOF
echo "layout_choice: ok"
