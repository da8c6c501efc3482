// BlisGemm (policy `blis`): GEMMs on a CPU device as host GEMMs (host_gemm.h) that call BLIS
// (bli_sgemm_ex), with host_gemm_threads threads per call. BLIS picks its micro-kernels for the CPU
// at run time (haswell, zen3, skx, ...) from its model and brand string. Where that misses an
// instruction set the CPU reports (BLIS 0.9 runs AVX2 kernels on AVX-512 CPUs whose FMA units it
// cannot tell from the brand string, common on cloud machines, and has no kernels for Zen 4's
// AVX-512), BLIS is left out of `--gemm=auto` and the log says why: Debian 12's BLIS 0.9.0 offers
// no way to choose its kernels (it aborts whenever BLIS_ARCH_TYPE is set, whatever the value, and
// exports no per-configuration context), and oneDNN dispatches by CPUID. Float32 operands only
// (16-bit ones go to oneDNN or the packed OpenCL GEMM under `auto`). A strided batch of at least as
// many matrices as threads runs its matrices side by side, one single-threaded bli_sgemm_ex each;
// smaller ones in turn.
#pragma once

#include <memory>
#include <string>

#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

// ConfigError naming the device when it cannot.
std::unique_ptr<Gemm> make_blis_gemm(device::Device& device);
// Why BLIS's kernels (`blis_config`, BLIS's name: "haswell", "skx", "zen3", ...) are narrower than a
// CPU whose CPUID reports AVX-512 F, DQ, BW and VL (`cpu_avx512`); "" when they are not.
std::string blis_narrower_than_cpu(bool cpu_avx512, const std::string& blis_config);
// Why `--gemm=auto` leaves BLIS out on this host (blis_narrower_than_cpu for its CPU); "" when it
// does not.
std::string blis_auto_refusal();
// BLIS 0.9.0 aborts at its first call whenever BLIS_ARCH_TYPE is set (it checks the requested
// configuration before registering any): with that version, a user's BLIS_ARCH_TYPE is unset with
// a warning, returned for the caller to log once its logging is set up ("" when nothing was
// unset). Programs call it first in main, while they have one thread (unsetenv is not safe beside
// other threads' getenv).
std::string ignore_blis_arch_type_where_it_aborts();
// "BLIS 0.9.0, zen3 kernels": the library and the micro-kernels it chose for this CPU.
std::string blis_description();

}  // namespace paxocl::kernels
