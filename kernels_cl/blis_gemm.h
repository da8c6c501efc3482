// BlisGemm (policy `blis`): GEMMs on a CPU device as OpenCL native kernels that call BLIS
// (bli_sgemm_ex) on the buffers' own memory, in queue order, with events like any kernel. BLIS
// picks its micro-kernels for the CPU it runs on at run time (haswell, zen3, skx, ...); each call
// uses the device's compute units divided by the CPU devices open in this process (PoCL reports
// every core for each; the devices run at once), so POCL_DEVICES="pthread pthread" on 2 cores gives
// each device one BLIS thread. Float32 operands only (16-bit ones go
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
