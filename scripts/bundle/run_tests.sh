#!/usr/bin/env bash
# Runs the device tests (ctest's label gpu, without CMake) on the selected device: PAX_OCL_DEVICES
# (default auto: a GPU when there is one). In a bundle this is bin/run-tests; in a build tree
# PAX_OCL_TEST_BIN_DIR names build/tests.
#
# Usage: run-tests [--quick] [--jobs N] [--out DIR] [BINARY...]   (default: every device test binary)
# --jobs N runs N binaries at once (default 1): on a GPU their time is mostly the driver compiling
# programs on the host's cores, which N binaries share.
# Writes DIR/<binary>.log and .xml (GoogleTest) and DIR/summary.txt: one line per binary with its
# passed/failed/skipped counts. Exit status 1 when any test failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=test-results
quick=0
jobs=1
bins=()
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -*) echo "run-tests: unknown flag '$1' (--quick, --jobs N, --out DIR)" >&2; exit 2 ;;
    *) bins+=("$1") ;;
  esac
  shift
done
list=$here/../share/device_tests.txt                      # in a bundle
[[ -f $list ]] || list=$here/device_tests.txt               # in the source tree
mapfile -t all < <(grep -v '^#' "$list")
((${#bins[@]})) || { if ((quick)); then bins=(test_dtype test_elementwise); else bins=("${all[@]}"); fi; }
if [[ -f "$here/../env.sh" ]]; then
  runner=("$here/run")
else
  runner=()
  [[ -n ${PAX_OCL_TEST_BIN_DIR:-} ]] || { echo "run-tests: set PAX_OCL_TEST_BIN_DIR to build/tests" >&2; exit 2; }
fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-tests: --jobs $jobs: give a count of 1 or more" >&2; exit 2; }
mkdir -p "$out"
: >"$out/summary.txt"
failed=0
# Runs binary $1, its exit status into $out/$1.rc.
run_one() {
  local b=$1 cmd
  if ((${#runner[@]})); then cmd=("${runner[@]}" "$b"); else cmd=("$PAX_OCL_TEST_BIN_DIR/$b"); fi
  "${cmd[@]}" --gtest_output="xml:$out/$b.xml" >"$out/$b.log" 2>&1
  echo $? >"$out/$b.rc"
}
for b in "${bins[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
  run_one "$b" &
done
wait
# The summary in the list's order, whatever order the binaries finished in.
for b in "${bins[@]}"; do
  rc=$(cat "$out/$b.rc" 2>/dev/null || echo 1)
  rm -f "$out/$b.rc"
  passed=$(grep -c '^\[       OK \]' "$out/$b.log")
  # One line per test as it ends ("(N ms)"); GoogleTest lists failures and skips again at the end.
  fails=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$out/$b.log")
  skips=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$out/$b.log")
  line=$(printf '%-26s %4d passed %3d failed %3d skipped (exit %d)' "$b" "$passed" "$fails" "$skips" "$rc")
  echo "$line" | tee -a "$out/summary.txt"
  grep -E '^\[  (FAILED  |SKIPPED )\] .* \([0-9]+ ms\)$' "$out/$b.log" | sed 's/^/    /' | tee -a "$out/summary.txt"
  ((rc == 0)) || failed=1
done
exit $failed
