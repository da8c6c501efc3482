// BlisGemm (policy `blis`): GEMMs on a CPU device as OpenCL native kernels that call BLIS
// (bli_sgemm_ex) on the buffers' own memory, in queue order, with events like any kernel. BLIS
// picks its micro-kernels for the CPU it runs on at run time (haswell, zen3, skx, ...); each call
// uses as many BLIS threads as the device has compute units, so POCL_DEVICES="pthread pthread"
// with POCL_MAX_PTHREAD_COUNT=1 gives each device one thread. Float32 operands only (16-bit ones go
// to the packed OpenCL GEMM under `auto`). A strided batch of at least as many matrices as threads
// runs its matrices side by side, one single-threaded bli_sgemm_ex each; smaller ones in turn.
// Operands reach the kernel as host pointers from clEnqueueMapBuffer (zero-copy on PoCL), so
// devices sharing a context (the ICI ring) get coherent memory like any command's.
#pragma once

#include <memory>
#include <string>

#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

// Whether `device` can run BlisGemm: a CPU device with native kernels.
bool blis_gemm_available(const device::Device& device);
// ConfigError naming the device when it cannot.
std::unique_ptr<Gemm> make_blis_gemm(device::Device& device);
// "BLIS 0.9.0, zen3 kernels": the library and the micro-kernels it chose for this CPU.
std::string blis_description();

}  // namespace paxocl::kernels
