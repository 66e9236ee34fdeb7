#!/usr/bin/env bash
# scripts/gpu-kit.sh — pack what bench/gpu-check.sh needs on a bare GPU machine that reaches no
# package registry (docs/cuda.md, "The GPU kit"): the built fuse-advise, its CUPTI tracer and
# the GPU test programs, stripped, plus every shared library they link that is not libc, from
# this machine's Debian packages (oneDNN, protobuf-c, SQLite, OpenSSL, yajl, zlib, Graphviz
# with its core and dot-layout plugins, libgomp, libstdc++ ...), into one folder found through
# LD_LIBRARY_PATH. The CUDA toolkit libraries are not packed: fuse-advise opens them with
# dlopen from the GPU machine's own CUDA install (they are GBs; the machine has them).
#
#   bash scripts/gpu-kit.sh [KIT_DIR] [BUILD_DIR]      # defaults: gpu-kit, build
#
# Then on the GPU machine, from the repository root: GPU_CHECK_KIT=gpu-kit bash bench/gpu-check.sh
# Fails when the folder would reach 64 MiB (the device tool's transfer limit).
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=${1:-gpu-kit}
BUILD=${2:-${FA_BUILD_DIR:-build}}
LIMIT=$((64 * 1024 * 1024))
[ -x "$BUILD/fuse-advise" ] || { echo "gpu-kit: $BUILD/fuse-advise not built (bash scripts/setup.sh)" >&2; exit 1; }

rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/tests" "$KIT/lib"
progs=("$BUILD/fuse-advise")
cp "$BUILD/fuse-advise" "$KIT/bin/"
# the tracer and the GPU tests exist only in a build with the cuda target (the tracer is built
# only then; without it the test programs are built but skip themselves, so they stay out)
if [ -f "$BUILD/libfuse-advise-cupti.so" ]; then
    cp "$BUILD/libfuse-advise-cupti.so" "$KIT/bin/"
    progs+=("$BUILD/libfuse-advise-cupti.so")
    for t in test_cuda_gpu test_cuda_fused_gpu test_cuda_exec test_cupti test_cuda_fused; do
        [ -x "$BUILD/tests/$t" ] || continue
        cp "$BUILD/tests/$t" "$KIT/tests/"
        progs+=("$BUILD/tests/$t")
    done
else
    echo "gpu-kit: $BUILD has no cuda target (built without the CUDA toolkit): packing fuse-advise alone" >&2
fi

# libc's own family stays the machine's (it must match its kernel and loader); the CUDA driver
# and toolkit libraries are the GPU machine's too (never linked: dlopen at run time).
is_system() {
    case "$(basename "$1")" in
        linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
            libresolv.so.* | libutil.so.*) return 0 ;;
        libcuda.so.* | libcudart.so.* | libnvrtc*.so.* | libcupti.so.* | libcublas*.so.* | libcudnn*.so.* | \
            libnvidia-*.so.*) return 0 ;;
    esac
    return 1
}

# Graphviz loads its renderers as plugins named in config6a (GVBINDIR): pack the two we use.
GVDIR=$(dirname "$(ldconfig -p | awk '/libgvc\.so\.6 /{print $NF; exit}')")/graphviz
plugins=()
if [ -f "$GVDIR/config6a" ]; then
    mkdir -p "$KIT/lib/graphviz"
    for p in core dot_layout; do
        f=$GVDIR/libgvplugin_$p.so.6
        [ -f "$f" ] && { cp -L "$f" "$KIT/lib/graphviz/"; plugins+=("$f"); }
    done
    # config6a blocks ("libgvplugin_X.so.6 X { ... }") of the packed plugins only
    awk '/^libgvplugin_/ { keep = ($1 == "libgvplugin_core.so.6" || $1 == "libgvplugin_dot_layout.so.6") }
         keep || /^#/' "$GVDIR/config6a" >"$KIT/lib/graphviz/config6a"
fi

# every library the programs and plugins need, as the loader resolves it here
for p in "${progs[@]}" "${plugins[@]}"; do
    ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
done | sort -u | while read -r lib; do
    is_system "$lib" && continue
    cp -L "$lib" "$KIT/lib/$(basename "$lib")"
done
strip --strip-unneeded "$KIT"/bin/* "$KIT"/tests/* "$KIT"/lib/*.so* "$KIT"/lib/graphviz/*.so* 2>/dev/null || true

cat >"$KIT/README" <<EOF
fuse-advise GPU kit, packed $(date -u +%FT%TZ) from $(git rev-parse --short HEAD 2>/dev/null || echo "?")
by scripts/gpu-kit.sh. On the GPU machine, from the repository root:
    GPU_CHECK_KIT=$KIT bash bench/gpu-check.sh
By hand: LD_LIBRARY_PATH=$KIT/lib GVBINDIR=$KIT/lib/graphviz $KIT/bin/fuse-advise ...
EOF
bytes=$(du -sb "$KIT" | cut -f1)
echo "gpu-kit: $KIT: $(find "$KIT" -type f | wc -l) files, $((bytes / 1024 / 1024)) MiB ($bytes bytes)"
if [ "$bytes" -ge "$LIMIT" ]; then
    echo "gpu-kit: $KIT is $bytes bytes, over the 64 MiB the device tool carries" >&2
    exit 1
fi
