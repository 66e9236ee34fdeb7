#!/usr/bin/env bash
# The GPU kit (scripts/gpu-kit.sh, docs/cuda.md) runs on a machine without this one's Debian
# libraries: packed from the build, it stays under 64 MiB; with LD_LIBRARY_PATH=KIT/lib every
# library its programs load resolves inside the kit except libc's own family (ldd); and, in a
# private mount namespace where the system's copies of the packed libraries are hidden (/dev/null
# bound over each), the packed fuse-advise runs a model, stores it, renders graph.svg through the
# packed Graphviz plugins and exports ONNX, while the build's own binary cannot even start there.
# The namespace part needs root and unshare(1): without them it reports itself skipped (77).
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$FA_SOURCE_DIR/scripts/gpu-kit.sh" "$tmp/kit" "$FA_BUILD_DIR" >"$tmp/pack.log" 2>&1 || { cat "$tmp/pack.log"; fail "packing"; }
cat "$tmp/pack.log"
KIT=$tmp/kit
bytes=$(du -sb "$KIT" | cut -f1)
[ "$bytes" -lt $((64 * 1024 * 1024)) ] || fail "kit is $bytes bytes (limit 64 MiB)"
ls "$KIT/lib/"*.so* >/dev/null || fail "no libraries packed"

# 1. ldd with the kit's path: nothing outside the kit but libc's family and the dlopen'ed CUDA
#    toolkit (which the tracer links directly)
bad=0
for p in "$KIT"/bin/* "$KIT"/tests/* "$KIT"/lib/graphviz/*.so*; do
    [ -f "$p" ] && [ -x "$p" -o "${p%.so*}" != "$p" ] || continue
    while read -r name path; do
        case "$name" in
            linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libutil.so.* | libresolv.so.*) continue ;;
            libcupti.so.* | libcuda.so.*) continue ;;
        esac
        case "$path" in
            "$KIT"/*) ;;
            *) echo "  $p: $name -> $path (outside the kit)"; bad=1 ;;
        esac
    done < <(LD_LIBRARY_PATH="$KIT/lib" ldd "$p" | awk '$2 == "=>" {print $1, $3}')
done
[ $bad -eq 0 ] || fail "libraries resolve outside the kit"
echo "ldd: every packed program resolves its libraries inside the kit"

# 2. the system's copies hidden
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
    echo "SKIP: hiding the system libraries needs root and unshare -m (ldd check passed)"
    exit 77
fi
cat >"$tmp/hidden.sh" <<'EOF'
set -euo pipefail
KIT=$1 BUILD_CLI=$2 W=$3
mount --make-rprivate /
n=0
for lib in "$KIT"/lib/*.so* "$KIT"/lib/graphviz/*.so*; do
    name=$(basename "$lib")
    for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/graphviz /usr/lib /lib; do
        [ -e "$dir/$name" ] || continue
        real=$(readlink -f "$dir/$name")
        mount --bind /dev/null "$real" && n=$((n + 1))
    done
done
echo "hidden: $n system copies of the packed libraries"
# the build's own binary needs them: it must not start (shows the hiding works)
if "$BUILD_CLI" --help >/dev/null 2>"$W/build-cli.err"; then echo "FAIL: the build's fuse-advise started with its libraries hidden"; exit 1; fi
echo "build's fuse-advise without the kit: $(head -c 160 "$W/build-cli.err")"
export LD_LIBRARY_PATH=$KIT/lib GVBINDIR=$KIT/lib/graphviz
FA=$KIT/bin/fuse-advise
cd "$W"
"$FA" run zoo:convnet-tiny --no-apply --iters 2 --warmup 1 --db "$W/k.db" >"$W/run.log"
"$FA" report latest --db "$W/k.db" -o "$W/rep" >/dev/null
grep -q "<svg" "$W/rep/graph.svg" || { echo "FAIL: no SVG from the packed Graphviz"; exit 1; }
grep -q "</html>" "$W/rep/report.html" || { echo "FAIL: no report.html"; exit 1; }
"$FA" zoo convnet-tiny -o "$W/c.onnx" >/dev/null
"$FA" inspect "$W/c.onnx" >/dev/null
"$FA" runs --db "$W/k.db" | grep convnet-tiny >/dev/null
if [ -x "$KIT/tests/test_cupti" ]; then "$KIT/tests/test_cupti" >"$W/cupti.log" 2>&1 || { tail "$W/cupti.log"; echo "FAIL: test_cupti from the kit"; exit 1; }; fi
echo "packed fuse-advise ran convnet-tiny, stored it, rendered graph.svg and exported ONNX with the system copies hidden"
EOF
unshare -m bash "$tmp/hidden.sh" "$KIT" "$FA_CLI" "$tmp" || fail "running from the kit with the system libraries hidden"
echo "gpu_kit: 1 passed, 0 failed"
