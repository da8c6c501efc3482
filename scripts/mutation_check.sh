#!/usr/bin/env bash
# Mutation check (issue 25 point 4): do the kernel and model tests catch bugs? Makes seeded,
# reproducible single-token mutants of kernels_cl/*.cl and of the model's host code
# (models/*.cpp, models/layers/*.cpp), runs the tests that exercise each file on each mutant, and
# reports which mutants the tests kill. A dev tool for a person: slow (about 30 s a mutant on 2
# cores), never run by CI (it refuses when $CI is set). Results: docs/testing.md, "Mutation check".
#
# Usage: scripts/mutation_check.sh SEED COUNT [FILE_REGEX]
#   SEED, COUNT  pick COUNT mutants with seed SEED (scripts/mutation_check.py lists the operators);
#                the same seed on the same sources gives the same mutants
#   FILE_REGEX   only mutate files whose path matches (e.g. 'kernels_cl/gelu')
# Environment:
#   BUILD_DIR=build        a configured build tree of this checkout (test binaries are built in it)
#   IDS=M003,M017          run only these mutants of the plan (e.g. to re-check survivors)
#   JOBS=auto              ninja jobs for host mutants: auto is 2 when the load average is below 0.5, else 1
#   TIMEOUT_FACTOR=3       a test binary's limit: FACTOR x its unmutated time + 30 s; past it the
#                          mutant counts as killed by timeout (a hang), reported apart
#   RESULTS=$BUILD_DIR/mutation-results.tsv   one line per mutant; logs in $BUILD_DIR/mutation-logs/
#
# Per mutant:
#   kernel (.cl): the sources are copied to a temp dir, the one file mutated there, and the tests run
#     with PAX_OCL_KERNEL_SOURCE_DIR pointing at it (no rebuild; the program cache keys on the
#     source). A portable kernel that has a CPU twin (x.cl beside x_cpu.cl) runs with
#     PAX_OCL_KERNELS=portable, since the CPU devices would otherwise load the twin.
#   host (.cpp): the file is mutated in place, the affected test binaries rebuilt with ninja, the
#     tests run, the file restored (also on Ctrl-C or any exit: a trap). A mutant that does not
#     compile (C++ or OpenCL C) is "invalid", reported apart and not counted.
# Tests: the device tests of the file's area (test_kernels, test_gemm, test_dtype, test_elementwise,
# test_gpt_model, test_golden) and, for host files, the host tests of that file (test_weights_io,
# test_shard_plan, test_loss_scaler, test_reference_gpt); binaries run directly with
# --gtest_fail_fast, stopping at the first failure. Before the mutants, every binary runs once
# unmutated: it must pass, which warms the program cache and sets the time limits.
set -euo pipefail

if [[ -n "${CI:-}" ]]; then
  echo "mutation_check.sh: not for CI (\$CI is set): it takes about an hour" >&2
  exit 2
fi
if [[ $# -lt 2 || $# -gt 3 || ! "$1" =~ ^[0-9]+$ || ! "$2" =~ ^[0-9]+$ ]]; then
  sed -n '/^# Usage/,/^# Environment/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
SEED=$1
COUNT=$2
FILTER=${3:-}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$ROOT" && realpath -m "${BUILD_DIR:-build}")
GEN="python3 $ROOT/scripts/mutation_check.py"
RESULTS=${RESULTS:-$BUILD/mutation-results.tsv}
LOGS=$BUILD/mutation-logs
TIMEOUT_FACTOR=${TIMEOUT_FACTOR:-3}
[[ -f "$BUILD/build.ninja" ]] || { echo "mutation_check.sh: no configured build in $BUILD (BUILD_DIR)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pax-mutation.XXXXXX")
MUTATED=""  # the host file now holding a mutant, if any

restore() {
  if [[ -n "$MUTATED" ]]; then
    cat "$WORK/backup" >"$ROOT/$MUTATED"  # new mtime: ninja rebuilds it (a ccache hit) next time
    [[ -z "${1:-}" ]] || echo "restored $MUTATED" >&2
    MUTATED=""
  fi
}
on_exit() {
  local rc=$?
  restore loud
  rm -rf "$WORK"
  exit $rc
}
trap on_exit EXIT
trap 'echo "interrupted; restoring" >&2; exit 130' INT TERM HUP

# The test environment of tests/CMakeLists.txt, with its own program caches: mutant binaries are
# deleted after each mutant, so only the unmutated programs stay.
CACHE=$BUILD/mutation-cache
export POCL_DEVICES="pthread pthread"
export PAX_OCL_CACHE_DIR=$CACHE/programs POCL_CACHE_DIR=$CACHE/pocl PAX_OCL_DATA_DIR=$BUILD/test-cache/data
unset PAX_OCL_KERNEL_SOURCE_DIR PAX_OCL_KERNELS PAX_OCL_DEVICES
mkdir -p "$CACHE/programs" "$CACHE/pocl" "$LOGS"

jobs_now() {
  if [[ "${JOBS:-auto}" != auto ]]; then echo "$JOBS"; return; fi
  awk '{ print ($1 < 0.5) ? 2 : 1 }' /proc/loadavg
}

# The test binaries (with the variant to run: "" or "portable") that exercise FILE, fastest first.
tests_for() {
  local file=$1 stem
  stem=$(basename "$file" .cl)
  stem=${stem%_cpu}
  case "$file" in
    kernels_cl/*)
      local variant=""
      [[ "$file" != *_cpu.cl && -f "$ROOT/kernels_cl/${stem}_cpu.cl" ]] && variant=portable
      case "$stem" in
        elementwise) echo "test_elementwise:$variant test_gpt_model:$variant test_golden:$variant" ;;
        gemm_mma) echo "test_gemm:" ;;
        gemm*) echo "test_gemm: test_kernels: test_gpt_model: test_golden:" ;;
        dtype) echo "test_dtype: test_elementwise: test_kernels: test_gemm: test_gpt_model: test_golden:" ;;
        cast) echo "test_dtype: test_gpt_model: test_golden:" ;;
        *) echo "test_kernels:$variant test_gpt_model:$variant test_golden:$variant" ;;
      esac ;;
    models/weights_io.cpp) echo "test_weights_io: test_gpt_model: test_golden:" ;;
    models/shard_plan.cpp) echo "test_shard_plan: test_gpt_model:" ;;
    models/loss_scaler.cpp) echo "test_loss_scaler: test_gpt_model:" ;;
    models/gpt_config.cpp | models/model_config.cpp | models/parameter_layout.cpp | models/initial_parameters.cpp)
      echo "test_reference_gpt: test_weights_io: test_shard_plan: test_loss_scaler: test_gpt_model: test_golden:" ;;
    models/layers/*) echo "test_kernels: test_gpt_model: test_golden:" ;;  # test_kernels tests the layers too
    models/*) echo "test_gpt_model: test_golden:" ;;
  esac
}

# Runs one test binary; prints "pass", "fail", "timeout" or "invalid" (an OpenCL build error).
declare -A LIMIT
run_test() {
  local spec=$1 log=$2 bin=${1%%:*} variant=${1#*:} rc=0
  local limit=${LIMIT[$spec]:-600}
  if [[ -n "$variant" ]]; then
    PAX_OCL_KERNELS=$variant timeout -k 10 "$limit" nice -n 19 "$BUILD/tests/$bin" --gtest_fail_fast --gtest_brief=1 >>"$log" 2>&1 || rc=$?
  else
    timeout -k 10 "$limit" nice -n 19 "$BUILD/tests/$bin" --gtest_fail_fast --gtest_brief=1 >>"$log" 2>&1 || rc=$?
  fi
  if [[ $rc -eq 0 ]]; then echo pass
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then echo timeout
  elif grep -q "failed to compile for device" "$log"; then echo invalid
  else echo fail
  fi
}

mapfile -t PLAN < <($GEN plan "$ROOT" "$SEED" "$COUNT" "$FILTER")
if [[ -n "${IDS:-}" ]]; then
  mapfile -t PLAN < <(printf '%s\n' "${PLAN[@]}" | awk -F'\t' -v ids=",$IDS," 'index(ids, "," $1 ",")')
fi
[[ ${#PLAN[@]} -gt 0 ]] || { echo "mutation_check.sh: no mutants planned" >&2; exit 2; }

# Every binary any planned mutant needs, built from the unmutated sources, then run once.
declare -A NEEDED
for row in "${PLAN[@]}"; do
  IFS=$'\t' read -r _ _ file _ <<<"$row"
  for spec in $(tests_for "$file"); do NEEDED[$spec]=1; done
done
mapfile -t SPECS < <(printf '%s\n' "${!NEEDED[@]}" | sort)
mapfile -t BINARIES < <(printf '%s\n' "${SPECS[@]%%:*}" | sort -u)
scope=${FILTER:+ of files matching \"$FILTER\"}
echo "== mutation check: seed $SEED, $COUNT mutants$scope${IDS:+ (only $IDS)}, $(git -C "$ROOT" rev-parse --short HEAD)"
echo "== building ${BINARIES[*]}"
nice -n 19 ninja -C "$BUILD" -j"$(jobs_now)" "${BINARIES[@]}" >"$LOGS/build.log" 2>&1 || {
  tail -30 "$LOGS/build.log" >&2; echo "mutation_check.sh: the unmutated build fails" >&2; exit 1; }
for spec in "${SPECS[@]}"; do
  start=$(date +%s)
  : >"$LOGS/baseline-${spec/:/-}.log"
  result=$(run_test "$spec" "$LOGS/baseline-${spec/:/-}.log")
  took=$(( $(date +%s) - start ))
  if [[ $result != pass ]]; then
    tail -30 "$LOGS/baseline-${spec/:/-}.log" >&2
    echo "mutation_check.sh: $spec fails without a mutant ($result); fix that first" >&2
    exit 1
  fi
  LIMIT[$spec]=$(( TIMEOUT_FACTOR * took + 30 ))
  variant=${spec#*:}
  echo "== unmutated ${spec%%:*}${variant:+ (PAX_OCL_KERNELS=$variant)}: pass in ${took}s (limit ${LIMIT[$spec]}s)"
done
touch "$CACHE/.unmutated"

mkdir -p "$WORK/kernels"
printf 'id\tfile\tline\toriginal\tmutant\tresult\tby\tseconds\n' >"$RESULTS"
declare -A TALLY=([killed]=0 [survived]=0 [invalid]=0 [timeout]=0)
SURVIVORS=()
run_start=$(date +%s)
for row in "${PLAN[@]}"; do
  IFS=$'\t' read -r id kind file line col orig new <<<"$row"
  log=$LOGS/$id.log
  printf '%s %s:%s  %s -> %s\n' "$id" "$file" "$line" "$orig" "$new" >"$log"
  start=$(date +%s)
  status=survived by=""
  bins=$(tests_for "$file" | tr ' ' '\n' | sed 's/:.*//' | sort -u | tr '\n' ' ')
  if [[ $kind == kernel ]]; then
    cp "$ROOT"/kernels_cl/*.cl "$WORK/kernels/"
    $GEN apply "$ROOT/$file" "$WORK/kernels/$(basename "$file")" "$line" "$col" "$orig" "$new"
    export PAX_OCL_KERNEL_SOURCE_DIR=$WORK/kernels
    # Binaries relinked for an earlier host mutant are rebuilt from the restored sources (else a no-op).
    # shellcheck disable=SC2086
    nice -n 19 ninja -C "$BUILD" -j"$(jobs_now)" $bins >>"$LOGS/build.log" 2>&1 || {
      echo "mutation_check.sh: the unmutated build fails ($LOGS/build.log)" >&2; exit 1; }
  else
    cp "$ROOT/$file" "$WORK/backup"
    MUTATED=$file
    $GEN apply "$WORK/backup" "$ROOT/$file" "$line" "$col" "$orig" "$new"
    # shellcheck disable=SC2086
    if ! nice -n 19 ninja -C "$BUILD" -j"$(jobs_now)" $bins >>"$log" 2>&1; then status=invalid by=compiler; fi
  fi
  if [[ $status != invalid ]]; then
    for spec in $(tests_for "$file"); do
      result=$(run_test "$spec" "$log")
      case $result in
        pass) ;;
        fail) status=killed by=${spec%:}; break ;;
        timeout) status=timeout by=${spec%:}; break ;;
        invalid) status=invalid by=opencl; break ;;
      esac
    done
  fi
  unset PAX_OCL_KERNEL_SOURCE_DIR
  restore
  find "$CACHE" -type f -newer "$CACHE/.unmutated" -delete
  took=$(( $(date +%s) - start ))
  by=${by/:portable/, portable}
  TALLY[$status]=$(( TALLY[$status] + 1 ))
  [[ $status == survived ]] && SURVIVORS+=("$id $file:$line '$orig' -> '$new'")
  printf '%s %-36s %-22s %-9s %s %ss\n' "$id" "$file:$line" "$(printf "'%s' -> '%s'" "$orig" "$new" | cut -c1-40)" \
    "$status" "${by:+($by)}" "$took"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$file" "$line" "$orig" "$new" "$status" "$by" "$took" >>"$RESULTS"
done

# Leave the build as the sources are (the restored files rebuild from ccache).
if [[ -n "$(printf '%s\n' "${PLAN[@]}" | awk -F'\t' '$2 == "host"')" ]]; then
  nice -n 19 ninja -C "$BUILD" -j"$(jobs_now)" "${BINARIES[@]}" >>"$LOGS/build.log" 2>&1 || echo "warning: the final rebuild failed ($LOGS/build.log)" >&2
fi

valid=$(( TALLY[killed] + TALLY[survived] + TALLY[timeout] ))
echo "== summary: seed $SEED, ${#PLAN[@]} mutants in $(( $(date +%s) - run_start ))s"
echo "   killed ${TALLY[killed]}, killed by timeout ${TALLY[timeout]}, survived ${TALLY[survived]}, invalid ${TALLY[invalid]} (not counted)"
if [[ $valid -gt 0 ]]; then
  awk -v k=$(( TALLY[killed] + TALLY[timeout] )) -v v=$valid \
    'BEGIN { printf "   killed share of the valid mutants: %d / %d = %.1f%%\n", k, v, 100 * k / v }'
fi
for s in "${SURVIVORS[@]}"; do echo "   survived: $s"; done
echo "   per mutant: $RESULTS; logs: $LOGS/"
