// Passive waiting for oneDNN's OpenMP threads (libgomp).
//
// libgomp's threads spin for milliseconds after each parallel region by default. Between oneDNN's
// GEMMs they take the cores from PoCL's kernels and BLIS's threads (bench_train_step C on 2 cores,
// AMD EPYC with AVX2, 2026-11-26: 2369 ms a step with `auto` mixing oneDNN and BLIS, 1906 ms with
// OMP_WAIT_POLICY=PASSIVE). libgomp reads the variable once, in its constructor, before main; a
// value set later, or from an executable's preinit array (libc's own initialisation resets the
// environment after it), is never seen. So a program sets it and executes itself again.
#pragma once

namespace paxocl::kernels {

// When OMP_WAIT_POLICY is unset: sets it to PASSIVE and re-executes this program (/proc/self/exe,
// same process, `argv` and otherwise the same environment), so this returns only in the new image.
// A policy the user set is kept; if the re-execution fails, the program goes on as it is.
// Call it first in main, before any thread or MPI starts.
void restart_with_passive_openmp_waits(char** argv);

// "PASSIVE", the user's OMP_WAIT_POLICY, or "unset (libgomp spins)": for the log.
const char* openmp_wait_policy();

}  // namespace paxocl::kernels
