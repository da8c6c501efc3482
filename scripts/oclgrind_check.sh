#!/usr/bin/env bash
# Runs a test binary's GPU-set kernels through Oclgrind (Debian package `oclgrind`), which executes
# work-groups as a GPU does (real barriers, local memory, every work-item) and checks each memory
# access: --data-races (also barrier divergence), --uninitialized, --check-api, and out-of-bounds
# accesses (always on). Fails when the tests fail or Oclgrind reports anything.
#   scripts/oclgrind_check.sh GROUP_SIZE TEST_BINARY GTEST_FILTER
# GROUP_SIZE is the GPU twins' work-group size (PAX_OCL_GPU_GROUP_SIZE). The ctest label `oclgrind`
# runs it (tests/CMakeLists.txt); docs/testing.md has what it covers.
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 GROUP_SIZE TEST_BINARY GTEST_FILTER" >&2
  exit 2
fi
group=$1 binary=$2 filter=$3
command -v oclgrind > /dev/null || { echo "oclgrind_check.sh: oclgrind not found (apt-get install oclgrind)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
# Oclgrind is the only platform the wrapped process sees; it reports itself as a GPU, and the GPU
# set is asked for explicitly all the same. Each test gets a device of its own (tests/device_fixture.h).
PAX_OCL_KERNELS=gpu PAX_OCL_GPU_GROUP_SIZE="$group" PAX_OCL_CACHE_DIR="$work/programs" PAXOCL_TEST_DEVICE_PER_TEST=1 \
  oclgrind --data-races --uninitialized --check-api "$binary" --gtest_filter="$filter" \
  > "$work/out" 2> "$work/err" || status=$?
tail -n 3 "$work/out"
if ! grep -qE '^\[==========\] [1-9][0-9]* tests? from' "$work/out"; then
  echo "oclgrind_check.sh: no test matched '$filter' (or the binary did not start)" >&2
  exit 1
fi
# Oclgrind's reports (every kind) start with one of these; spdlog's lines do not.
reports=$(grep -cE '^(Invalid|Uninitialized|Controlflow depends|Read-write data race|Write-write data race|Work-group divergence|Work-item divergence|Barrier divergence|OCLGRIND|Oclgrind|Error|Warning)' "$work/err" || true)
if [ "$reports" -gt 0 ]; then
  echo "Oclgrind reported $reports problem(s) at work-groups of $group; the first ones:" >&2
  head -n 60 "$work/err" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "the tests failed under Oclgrind (exit $status)" >&2
  tail -n 40 "$work/err" >&2
  exit "$status"
fi
echo "Oclgrind: no data race, barrier divergence, out-of-bounds or uninitialized access at work-groups of $group"
