#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs the dependencies, builds (warnings
# are errors here), and runs every test through ctest. .ci/run calls exactly this.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -R Mesh]
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRA_CMAKE_ARGS="-DPAXOCL_WERROR=ON" scripts/setup.sh
# Tests bring their own environment (two PoCL devices, private caches, mpirun as root): see
# tests/CMakeLists.txt.
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" --timeout 600 "$@"
