// OneDnnGemm (policy `onednn`): GEMMs on a CPU device as host GEMMs (host_gemm.h) that run oneDNN's
// matmul primitive, whose kernels oneDNN generates at run time for the instruction set CPUID
// reports (AMX, AVX-512 BF16, AVX-512, AVX2), whatever the CPU's model or brand string. Every
// transpose, offset, leading dimension and strided batch goes to oneDNN as memory-descriptor
// strides (nothing is packed or copied by pax-ocl); alpha as the output scale, beta as a sum post-op
// (beta 0 never reads C). Operand dtypes: float32 always; bfloat16 / float16 A and B (float32
// accumulation, C in any dtype) where oneDNN has a kernel for them on this CPU (bfloat16 needs
// AVX-512; oneDNN 2.6 has no float16 CPU matmul), probed once per dtype mix (supports()). Threads per
// call: host_gemm_threads, set on oneDNN's OpenMP runtime for the calling thread only, so devices
// and processes sharing a host do not oversubscribe it. Primitives are made once per shape,
// layout and dtype mix and kept for the GEMM's life.
#pragma once

#include <memory>
#include <string>

#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

// Whether `device` can run OneDnnGemm: a CPU device with native kernels.
bool onednn_gemm_available(const device::Device& device);
// ConfigError naming the device when it cannot.
std::unique_ptr<Gemm> make_onednn_gemm(device::Device& device);
// "oneDNN 2.6.3, avx512_core_amx kernels": the library and the instruction set it dispatches to.
std::string onednn_description();

}  // namespace paxocl::kernels
