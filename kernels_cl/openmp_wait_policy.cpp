// Passive waiting for oneDNN's OpenMP threads, compiled into every executable that links the
// kernels (an INTERFACE source of paxocl_kernels).
//
// libgomp's threads spin for milliseconds after each parallel region by default. Between oneDNN's
// GEMMs they took the cores from PoCL's kernels and BLIS's threads: bench_train_step C on 2 cores
// (AMD EPYC, AVX2) took 2369 ms a step with `auto` mixing oneDNN and BLIS, against 1906 ms with
// OMP_WAIT_POLICY=PASSIVE (2026-11-26). libgomp reads the variable once, in its constructor,
// before any of pax-ocl's code runs, so it is set from the executable's preinit array, which the
// dynamic linker runs before every shared library's constructors. A policy the user set is kept.
#include <cstdlib>

namespace {

void passive_openmp_waits(int, char**, char**) { setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0); }

__attribute__((section(".preinit_array"), used)) void (*const kPassiveOpenmpWaits)(int, char**, char**) =
    passive_openmp_waits;

}  // namespace
