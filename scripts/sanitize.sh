#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer: builds build-asan with
# PAXOCL_SANITIZE=ON (the whole project and its tests instrumented) and runs ctest there.
# docs/hardening.md describes what is covered and what is suppressed (driver code only).
#
# Usage: scripts/sanitize.sh [ctest arguments]     e.g. -L host (the host-only tests), -R Checkpoint
# Env:   SANITIZE_BUILD_DIR (default build-asan), SKIP_APT=1, JOBS, CC/CXX (gcc or clang-16)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${SANITIZE_BUILD_DIR:-build-asan}

# Sanitizer instrumentation makes GCC warn where it does not otherwise (e.g. -Wmaybe-uninitialized),
# so warnings stay warnings here; the normal build (scripts/test.sh) keeps -Werror.
ARGS="-DPAXOCL_SANITIZE=ON"
command -v ccache >/dev/null && ARGS+=" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
BUILD_DIR="$BUILD_DIR" EXTRA_CMAKE_ARGS="$ARGS" scripts/setup.sh

SUPP="$ROOT/scripts/sanitizers"
# Every finding fails its test: ASan and UBSan abort; LeakSanitizer reports at exit (binaries that
# leave with _Exit after using OpenCL, tests/test_main.cpp, skip the leak check).
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:suppressions=$SUPP/asan.supp${ASAN_EXTRA_OPTIONS:+:$ASAN_EXTRA_OPTIONS}"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
# mpirun starts the ranks of the MPI tests: hand them the same options (as mpirun -x would).
export OMPI_MCA_mca_base_env_list="ASAN_OPTIONS;LSAN_OPTIONS;UBSAN_OPTIONS"

ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 1200 "$@"
