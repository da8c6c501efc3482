#!/usr/bin/env bash
# Line coverage of pax-ocl's own C++ code per top-level folder (docs/testing.md, "Coverage"): a
# Debug build instrumented by gcov in build-cov, the test suite through ctest, then gcovr. Not run
# by CI. OpenCL C (kernels_cl/*.cl) runs inside the OpenCL driver, which gcov does not see.
#
# Usage: scripts/coverage.sh [ctest arguments]   e.g. -E '^Slurm[.]' (default: the whole suite)
#        (after scripts/setup.sh has installed the build packages; this adds gcovr)
# Env:   COVERAGE_BUILD_DIR (default build-cov), JOBS (default nproc), SKIP_APT=1,
#        SKIP_TESTS=1 (report on the counters already in the build directory)
# Out:   the table per folder on stdout (also $BUILD_DIR/coverage/folders.md);
#        $BUILD_DIR/coverage/index.html: every file, line by line
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${COVERAGE_BUILD_DIR:-build-cov}
JOBS=${JOBS:-$(nproc)}
FOLDERS=(app bench/suite checkpoint collectives common config device inputs kernels_cl models scheduler)

[[ "${SKIP_APT:-0}" == 1 ]] || scripts/install_packages.sh coverage gcovr

# Warnings stay warnings (-O0 and the instrumentation change what GCC warns about); tests/CMakeLists.txt
# sees --coverage and makes the OpenCL test binaries write their counters before they _Exit.
# Atomic counters: the prefetch, checkpoint and communicator threads race on plain ones, and a
# count that wraps negative stops gcovr ("branch taken -13").
FLAGS="--coverage -O0 -fprofile-update=atomic"
ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS=$FLAGS" "-DCMAKE_C_FLAGS=$FLAGS"
      -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage)
command -v ccache >/dev/null && ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD_DIR" "${ARGS[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

if [[ "${SKIP_TESTS:-0}" != 1 ]]; then
  find "$BUILD_DIR" -name '*.gcda' -delete  # counters from this run only
  # A failing test still leaves its counters; the report is made either way, and the status kept.
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 1200 "$@" || status=$?
fi

OUT="$BUILD_DIR/coverage"
mkdir -p "$OUT"
filters=()
for f in "${FOLDERS[@]}"; do filters+=(--filter "$ROOT/$f/"); done
# Generated protobuf code lives in the build directory, outside every filter.
gcovr -r "$ROOT" --object-directory "$BUILD_DIR" "${filters[@]}" -j "$JOBS" \
  --exclude-directories "$BUILD_DIR/CMakeFiles" --exclude-unreachable-branches --json-summary "$OUT/summary.json" --html-details "$OUT/index.html" \
  --txt "$OUT/files.txt" "$BUILD_DIR"

python3 - "$OUT/summary.json" "${FOLDERS[@]}" >"$OUT/folders.md" <<'EOF'
import json, sys
files = json.load(open(sys.argv[1]))["files"]
rows, total = [], [0, 0]
for folder in sys.argv[2:]:
    mine = [f for f in files if f["filename"].startswith(folder + "/")]
    covered = sum(f["line_covered"] for f in mine)
    lines = sum(f["line_total"] for f in mine)
    total[0] += covered
    total[1] += lines
    rows.append((folder, covered, lines))
rows.append(("all", *total))
print("| Folder | Lines | Covered | Line coverage |")
print("|---|---:|---:|---:|")
for folder, covered, lines in rows:
    print(f"| {folder} | {lines} | {covered} | {100.0 * covered / max(lines, 1):.1f}% |")
EOF
cat "$OUT/folders.md"
echo "per file: $OUT/files.txt, line by line: $OUT/index.html"
exit "${status:-0}"
