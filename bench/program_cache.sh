#!/usr/bin/env bash
# Start-up cost of building pax-ocl's kernels: a cold process (empty pax-ocl and PoCL caches)
# against warm processes that reuse the program cache. Each case runs in a fresh process.
# Usage: bench/program_cache.sh [REPEATS]   (after scripts/setup.sh; uses build/)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
bench=build/bench/bench_program_cache
[[ -x $bench ]] || { echo "bench/program_cache.sh: $bench not found; run scripts/setup.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ms_of() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }

echo "# device: $(POCL_CACHE_DIR=$work/x PAX_OCL_CACHE_DIR= $bench | sed 's/.*"device":"\([^"]*\)".*/\1/')"
for i in $(seq "$repeats"); do
  rm -rf "$work/pocl" "$work/pax"
  export POCL_CACHE_DIR=$work/pocl PAX_OCL_CACHE_DIR=$work/pax
  # On PoCL pax-ocl leaves caching to PoCL's own kernel cache; POCL_KERNEL_CACHE=0 makes it store
  # its binaries instead (as on every other driver), which the last case measures.
  cold=$($bench)                       # compiles from source, fills the caches
  warm=$($bench)                       # PoCL's cache (or, on other drivers, pax-ocl's binary) hit
  rm -rf "$work/pocl"
  POCL_KERNEL_CACHE=0 $bench >/dev/null  # stores pax-ocl binaries
  warm_pax_only=$(POCL_KERNEL_CACHE=0 $bench)
  echo "cold:           $cold"
  echo "warm:           $warm"
  echo "warm, pax-ocl binaries only:  $warm_pax_only"
  rm -rf "$work/pocl" "$work/pax"
  cold_ms=$(ms_of build/pax-ocl devices --check)
  warm_ms=$(ms_of build/pax-ocl devices --check)
  rm -rf "$work/pocl"
  POCL_KERNEL_CACHE=0 build/pax-ocl devices --check >/dev/null
  warm_pax_only_ms=$(POCL_KERNEL_CACHE=0 ms_of build/pax-ocl devices --check)
  echo "pax-ocl devices --check wall ms: cold $cold_ms  warm $warm_ms  warm, pax-ocl binaries only $warm_pax_only_ms"
done
