#include "kernels_cl/program_loader.h"

#include <string>

#include "device/cl_error.h"
#include "kernels_cl/embedded_sources.h"

namespace paxocl::kernels {

device::Program load_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                             std::string_view extra_options) {
  std::string options(kBuildOptions);
  if (!extra_options.empty()) options.append(" ").append(extra_options);
  // Every program starts with the storage-type helpers and GELU's formula (gelu_math.cl: the GELU
  // kernels and the direct GEMM's epilogue share it); #line keeps compiler messages' line numbers.
  // The source comes from program_source(): the embedded copy, or PAX_OCL_KERNEL_SOURCE_DIR's file.
  // The program cache keys on this full text, so an edited source never reuses an old binary.
  // GPU twins (built with -DPAX_WG, kernel_set.cpp) also get the work-group reductions (group_reduce.cl).
  // The tensor-core programs get the mma.sync primitives (mma_ops.cl), the GPU GEMMs their
  // epilogue (gemm_epilogue.cl).
  const bool gpu_twin = options.find("-DPAX_WG=") != std::string::npos;
  const bool mma = name == "gemm_mma" || name == "flash_attention_mma";
  const bool epilogue = name == "gemm_mma" || name == "gemm_direct";
  const std::string source = program_source("dtype") + "\n" + program_source("gelu_math") + "\n" +
                             (gpu_twin ? program_source("group_reduce") + "\n" : "") +
                             (mma ? program_source("mma_ops") + "\n" : "") +
                             (epilogue ? program_source("gemm_epilogue") + "\n" : "") + "#line 1\n" +
                             program_source(name);
  try {
    return cache.build(device.context(), device.info(), name, source, options);
  } catch (const device::ProgramBuildError& e) {
    // A copy in PAX_OCL_KERNEL_SOURCE_DIR that does not compile: the summary line names the file.
    const std::string origin = program_source_origin(name);
    if (origin.empty()) throw;
    throw device::ProgramBuildError(name, device.info().name, e.build_log(), origin);
  }
}

}  // namespace paxocl::kernels
