#!/usr/bin/env bash
# One-time set-up of a fresh Debian 12 machine for pax-ocl: installs the build and runtime
# dependencies (all Debian packages) and builds the project into ./build (Release).
#
# Usage: scripts/setup.sh            # install packages (needs root or sudo) + configure + build
#        SKIP_APT=1 scripts/setup.sh # only configure + build
# Env:   BUILD_DIR (default build), BUILD_TYPE (default Release), JOBS (default nproc),
#        EXTRA_CMAKE_ARGS (e.g. -DPAXOCL_WERROR=ON), SKIP_BUILD=1 (configure only)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  ocl-icd-opencl-dev opencl-headers opencl-c-headers pocl-opencl-icd clinfo
  libclblast-dev libclfft-dev
  libblis-pthread-dev                 # CPU devices' GEMMs (BLIS, pthreads)
  libdnnl-dev                         # CPU devices' GEMMs (oneDNN: kernels for the CPU's instruction set)
  openmpi-bin libopenmpi-dev
  hwloc libhwloc-dev
  libprotobuf-dev protobuf-compiler
  libspdlog-dev libfmt-dev nlohmann-json3-dev
  libeigen3-dev                       # header-only linear algebra: the SSM layer's HiPPO eigenvalues
  libsentencepiece-dev sentencepiece   # tokenizer library; spm_encode / spm_decode tools
  gnuplot-nox                          # pax-ocl bench: PNG plots
  bible-kjv                           # the default corpus (the King James Bible)
  libgtest-dev libgmock-dev
  oclgrind                            # tests (label oclgrind): the GPU kernels under a GPU-semantics simulator
  libopenblas0                        # the benchmarks' CPU GEMM reference, opened at run time
)

[[ "${SKIP_APT:-0}" == 1 ]] || scripts/install_packages.sh setup "${PACKAGES[@]}"

BUILD_DIR=${BUILD_DIR:-build}
# shellcheck disable=SC2086 # EXTRA_CMAKE_ARGS is a list of words
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" ${EXTRA_CMAKE_ARGS:-} >/dev/null
[[ "${SKIP_BUILD:-0}" == 1 ]] || cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
