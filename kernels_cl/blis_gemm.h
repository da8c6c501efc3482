// BlisGemm (policy `blis`): GEMMs on a CPU device as host GEMMs (host_gemm.h) that call BLIS
// (bli_sgemm_ex), with host_gemm_threads threads per call. BLIS picks its micro-kernels for the CPU
// at run time (haswell, zen3, skx, ...) from its model and brand string; where that misses an
// instruction set the CPU reports (BLIS 0.9 runs AVX2 kernels on AVX-512 CPUs whose FMA units it
// cannot tell from the brand string, common on cloud machines), the kernels are chosen from the
// CPUID flags instead (blis_kernels_from_isa), and the log says so. Float32 operands only (16-bit
// ones go to oneDNN or the packed OpenCL GEMM under `auto`). A strided batch of at least as many
// matrices as threads runs its matrices side by side, one single-threaded bli_sgemm_ex each;
// smaller ones in turn.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

// ConfigError naming the device when it cannot.
std::unique_ptr<Gemm> make_blis_gemm(device::Device& device);
// The BLIS_ARCH_TYPE id to set for a CPU whose CPUID reports AVX-512 F, DQ, BW and VL (`avx512`):
// skx's, unless the user set BLIS_ARCH_TYPE (`user_chose`); nullopt leaves BLIS's own choice.
std::optional<int> blis_kernels_from_isa(bool avx512, bool user_chose);
// Sets BLIS_ARCH_TYPE from CPUID where blis_kernels_from_isa says so, before BLIS first looks at
// the CPU (it reads the variable once, at its first call), and logs the choice; later calls do
// nothing. Programs call it first in main, while they have one thread (setenv is not safe beside
// other threads' getenv); BlisGemm and blis_description call it too.
void select_blis_kernels();
// "BLIS 0.9.0, zen3 kernels": the library and the micro-kernels it chose for this CPU.
std::string blis_description();

}  // namespace paxocl::kernels
