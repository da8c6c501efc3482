#!/usr/bin/env bash
# Builds pax-ocl's libFuzzer targets (fuzz/, into build-fuzz with clang 16: host-only libraries with
# ASan + UBSan and coverage) and runs each for a given time, starting from seed corpora the
# project's own writers produce. docs/hardening.md describes the targets and what counts as a finding.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]   (default: every target)
# Env:   SKIP_APT=1 (do not install clang), FUZZ_BUILD_DIR (default build-fuzz), JOBS (default nproc),
#        FUZZ_ARGS (more libFuzzer flags, e.g. "-jobs=2 -workers=2")
# Work corpora grow across runs in build-fuzz/corpus/<target>; crashes, leaks, timeouts and OOMs
# are saved under build-fuzz/artifacts/<target>/, full logs under build-fuzz/logs/. Exits non-zero
# when any target reported a finding. Reproduce one: build-fuzz/fuzzers/<target> <artifact file>.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(fuzz_token_shard fuzz_safetensors fuzz_llmc_weights fuzz_checkpoint fuzz_experiment fuzz_tfrecord
             fuzz_hf_llama fuzz_ssm_metadata fuzz_zero_shot)
SECONDS_PER_TARGET=${1:-60}
[[ $# -gt 0 ]] && shift
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL_TARGETS[@]}")
[[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS_PER_TARGET must be a number, got '$SECONDS_PER_TARGET'" >&2; exit 2; }

# clang 16: Debian 12's default clang (14) cannot compile C++20 lambdas that capture structured
# bindings, which the sources use; libclang-rt-16-dev holds libFuzzer and the sanitizer runtimes,
# llvm-16 the symbolizer that puts file:line into reports.
CLANG_VERSION=16
PACKAGES=(clang-$CLANG_VERSION libclang-rt-$CLANG_VERSION-dev llvm-$CLANG_VERSION)
[[ "${SKIP_APT:-0}" == 1 ]] || scripts/install_packages.sh fuzz "${PACKAGES[@]}"

BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  CC=clang-$CLANG_VERSION CXX=clang++-$CLANG_VERSION cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPAXOCL_FUZZ=ON -DPAXOCL_WERROR=ON -DPAXOCL_BUILD_TESTS=OFF -DPAXOCL_BUILD_BENCH=OFF "${LAUNCHER[@]}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"

# Seeds: regenerated every run (so they follow the formats), kept apart from the growing corpora.
rm -rf "$BUILD_DIR/seeds"
"$BUILD_DIR/fuzzers/make_seeds" "$BUILD_DIR/seeds"

# Sanitizer reports are findings; leaks too (libFuzzer checks them on every new input).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-$CLANG_VERSION || command -v llvm-symbolizer || true)}

findings=0
summary=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/fuzzers/$t"
  [[ -x "$bin" ]] || { echo "fuzz: no target $t (targets: ${ALL_TARGETS[*]})" >&2; exit 2; }
  corpus="$BUILD_DIR/corpus/$t" artifacts="$BUILD_DIR/artifacts/$t" log="$BUILD_DIR/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  dict=()
  [[ -f "fuzz/dict/$t.dict" ]] && dict=("-dict=fuzz/dict/$t.dict")
  before=$(find "$artifacts" -type f | wc -l)
  echo "fuzz: $t for ${SECONDS_PER_TARGET}s ..."
  rc=0
  # -rss_limit_mb also caps single allocations (malloc_limit_mb): a size taken from a header that
  # allocates gigabytes is a finding. -timeout: one input running 10 s is a hang.
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of words
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" "$BUILD_DIR/seeds/$t" >"$log" 2>&1 || rc=$?
  execs=$(grep -oP 'stat::number_of_executed_units:\s*\K[0-9]+' "$log" | tail -1 || true)
  rate=$(grep -oP 'stat::average_exec_per_sec:\s*\K[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -oP '^#[0-9]+\s.*\bcov: \K[0-9]+' "$log" | tail -1 || true)
  ft=$(grep -oP '^#[0-9]+\s.*\bft: \K[0-9]+' "$log" | tail -1 || true)
  after=$(find "$artifacts" -type f | wc -l)
  status=ok
  if ((rc != 0)); then
    findings=$((findings + 1))
    status="FINDING (exit $rc; $((after - before)) new artifact(s) in $artifacts; log $log)"
    echo "---- $t: end of $log"
    tail -n 40 "$log"
    echo "----"
  fi
  line=$(printf '%-20s executions %-10s exec/s %-7s cov %-6s ft %-7s %s' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$status")
  echo "$line"
  summary+=("$line")
done

echo
echo "fuzz: ${SECONDS_PER_TARGET}s per target"
printf '%s\n' "${summary[@]}"
if ((findings)); then
  echo "fuzz: $findings target(s) reported a finding" >&2
  exit 1
fi
