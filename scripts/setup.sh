#!/usr/bin/env bash
# Install what fuse-advise needs on a fresh Debian 12 machine (as root) and build it into
# ./build. Idempotent: re-running only rebuilds. Used by the README quick start and .ci/run.
#
#   bash scripts/setup.sh          what building and running the tool needs (no tests built)
#   bash scripts/setup.sh --test   that, plus what only our own tests need (cmocka, a PostgreSQL
#                                  server, Chromium, the python oracles), and builds the tests
#
# The tool's run-time dependencies alone, without building, come with its Debian package
# (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_TESTS=0
for a in "$@"; do
  case $a in
    --test) WITH_TESTS=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$a' (--test installs and builds the tests too)" >&2; exit 2 ;;
  esac
done

# Building and running the tool.
DEB_PKGS=(build-essential cmake pkg-config
  libprotobuf-c-dev protobuf-c-compiler   # ONNX import/export
  libsqlite3-dev                          # run database
  libpq-dev                               # PostgreSQL run store (--db postgresql://..., store/pg.c)
  libsleef-dev                            # vectorised exp/tanh/erf/pow in the elementwise kernels
  libdnnl-dev ocl-icd-opencl-dev opencl-headers  # oneDNN (conv / matmul / gemm bodies on cpu); its CMake config requires OpenCL, only Recommended by the -dev package
  libssl-dev                              # SHA-256 of models and traces
  libyajl-dev zlib1g-dev                  # streaming JSON + gzip for trace import
  libgraphviz-dev graphviz                # graph.dot / graph.svg
  help2man)                               # the man page, from the binary's own --help (scripts/man.sh)
# Only our own tests.
TEST_PKGS=(libcmocka-dev                  # unit tests
  postgresql                              # a real server for the store's tests (scripts/pg-test-server.sh)
  chromium                                # tests/cli/report_chromium.sh (headless report check; ~40 s install)
  python3 python3-venv)                   # test oracles (numpy, onnx, onnxruntime) in a venv, below
[ $WITH_TESTS = 1 ] && DEB_PKGS+=("${TEST_PKGS[@]}")

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR=${FA_BUILD_DIR:-build}
CMAKE_ARGS=()
if [ $WITH_TESTS = 1 ]; then
  # Python oracles for the test suite only (the product is C): numpy, onnx and onnxruntime in a
  # virtual environment inside the build folder. Debian 12's python refuses pip installs into the
  # system interpreter (PEP 668), and onnxruntime has no Debian package. CMake hands this python
  # to every test (FA_PYTHON); without it the oracle tests report themselves skipped.
  PYENV=$BUILD_DIR/pyenv
  # Importable, and at the versions requirements-test.txt pins (onnx: the node-suite table is
  # made for one onnx version, docs/conformance.md), so an older venv is brought up to the pins.
  have_oracles() {
    "$PYENV/bin/python3" - scripts/requirements-test.txt >/dev/null 2>&1 <<'PY'
import sys, importlib.metadata as md
import numpy, onnx, onnxruntime  # noqa: F401
pins = [ln.split("#")[0].strip().split("==") for ln in open(sys.argv[1])]
sys.exit(any(md.version(p[0].strip()) != p[1].strip() for p in pins if len(p) == 2))
PY
  }
  if [ -f scripts/requirements-test.txt ] && ! have_oracles; then
    mkdir -p "$BUILD_DIR"
    { [ -x "$PYENV/bin/python3" ] || python3 -m venv "$PYENV"; } &&
      "$PYENV/bin/python3" -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt \
      || echo "setup.sh: warning: could not install the python test oracles into $PYENV; oracle tests will be skipped" >&2
  fi
  have_oracles && CMAKE_ARGS+=(-DFA_PYTHON="$(cd "$PYENV/bin" && pwd)/python3")
  CMAKE_ARGS+=(-DFA_BUILD_TESTS=ON)
fi

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${CMAKE_ARGS[@]}" ${FA_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
