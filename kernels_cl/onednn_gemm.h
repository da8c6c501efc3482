// The oneDNN GEMM (policy `onednn`): oneDNN's matmul primitive as a Gemm.
//
// On CPU devices: host GEMMs (host_gemm.h) that run the matmul primitive, whose kernels oneDNN generates at run time for the instruction set CPUID
// reports (AMX, AVX-512 BF16, AVX-512, AVX2), whatever the CPU's model or brand string. Every
// transpose, offset, leading dimension and strided batch goes to oneDNN as memory-descriptor
// strides (nothing is packed or copied by pax-ocl); alpha as the output scale, beta as a sum post-op
// (beta 0 never reads C). Operand dtypes: float32 always; bfloat16 / float16 A and B (float32
// accumulation, C in any dtype) where oneDNN has a kernel for them on this CPU (bfloat16 needs
// AVX-512; oneDNN 2.6 has no float16 CPU matmul), probed once per dtype mix (supports()). Threads per
// call: host_gemm_threads, set on oneDNN's OpenMP runtime for the calling thread only, so devices
// and processes sharing a host do not oversubscribe it. Primitives are made once per shape,
// layout and dtype mix and kept for the GEMM's life.
//
// On Intel GPUs: the same primitive on the device's own OpenCL context and queue (oneDNN's OpenCL
// interop; its matrix kernels use the XMX units where the GPU has them), operands as the buffers
// themselves with their offsets in the memory descriptors, enqueued in queue order. Probed once
// per device (onednn_gpu_refusal): oneDNN must accept the device and a probe GEMM must match the
// host's; `auto` on GPUs times it beside pax-ocl's GEMMs only then. oneDNN refuses other vendors'
// devices itself (PoCL's: "could not create an engine").
#pragma once

#include <memory>
#include <string>

#include "device/auto_fprop_dtype.h"
#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

// The form for the device's kind; ConfigError naming the device and why when it cannot run it.
std::unique_ptr<Gemm> make_onednn_gemm(device::Device& device);
// The GPU form; DeviceError when the device is not an Intel GPU (unless !require_intel, for tests)
// or oneDNN refuses it.
std::unique_ptr<Gemm> make_onednn_gpu_gemm(device::Device& device, bool require_intel = true);
// Empty when the GPU form runs on `device` and its probe GEMM is right; else why not. Once per
// device and process; logged (at info on Intel GPUs).
std::string onednn_gpu_refusal(device::Device& device);
// "oneDNN 2.6.3, avx512_core_amx kernels": the library and the instruction set it dispatches to.
std::string onednn_description();
// oneDNN's bfloat16 x bfloat16 -> float32 matmul against its float32 one on host memory, 1024^3
// with B stored (n, k) as a linear layer's weight, `threads` OpenMP threads, each the best of 5
// timed runs after a warm-up (about 0.1 s): FPROP_DTYPE=auto's measurement (device/auto_fprop_dtype.h).
// bf16_gflops is 0 where oneDNN has no bfloat16 matmul here but its reference one (AVX2-only CPUs
// have none at all), `what` saying which; f32_gflops is measured either way.
device::Bf16GemmRates measure_onednn_bf16_gemm(unsigned threads);

}  // namespace paxocl::kernels
