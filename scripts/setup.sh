#!/usr/bin/env bash
# Install what fuse-advise needs on a fresh Debian 12 machine (as root) and build it into
# ./build. Idempotent: re-running only rebuilds. Used by the README quick start and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PKGS=(build-essential cmake pkg-config
  libprotobuf-c-dev protobuf-c-compiler   # ONNX import/export
  libsqlite3-dev                          # run database
  libcmocka-dev                           # unit tests
  libdnnl-dev ocl-icd-opencl-dev opencl-headers  # oneDNN (conv / matmul / gemm bodies on cpu); its CMake config requires OpenCL, only Recommended by the -dev package
  libssl-dev                              # SHA-256 of models and traces
  libyajl-dev zlib1g-dev                  # streaming JSON + gzip for trace import
  libgraphviz-dev graphviz                # graph.dot / graph.svg
  chromium                                # tests/cli/report_chromium.sh (headless report check; ~40 s install)
  python3 python3-pip)                    # test oracles (onnx, onnxruntime, numpy)

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python oracles for the test suite only (the product is C).
if [ -f scripts/requirements-test.txt ]; then
  python3 -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt \
    || echo "setup.sh: warning: could not install python test oracles; oracle tests will be skipped" >&2
fi

BUILD_DIR=${FA_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FA_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
