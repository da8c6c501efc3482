// Tensor cores, probed at run time and never assumed (issue 24). On an NVIDIA device (vendor or
// platform name says NVIDIA) the probe builds tensor_core_probe.cl three times, for mma.sync
// m16n8k16 bf16 -> f32, m16n8k16 f16 -> f32 and m16n8k8 tf32 -> f32, runs each on one tile of small
// integers and compares with the host product exactly. A build failure, a launch error or one
// wrong element turns that path off, with the reason. On any other device nothing is built.
// Results are kept per device for the process; the first probe of a device logs one line saying
// which GEMM path runs. PAX_OCL_TENSOR_CORES=0 turns every path off (e.g. to compare timings).
//
// Programs with inline PTX (kPtxPrograms) are only ever built through load_ptx_program, which
// refuses any device that is not NVIDIA's.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "device/device.h"
#include "device/dtype.h"
#include "device/program_cache.h"

namespace paxocl::kernels {

inline constexpr const char* kTensorCoresEnvVar = "PAX_OCL_TENSOR_CORES";
// The embedded programs that hold PTX (never built for another vendor's device).
inline constexpr std::array<std::string_view, 3> kPtxPrograms = {"gemm_mma", "flash_attention_mma", "tensor_core_probe"};

struct TensorCores {
  bool bf16 = false, f16 = false, tf32 = false;  // mma.sync for that input dtype gave the exact tile
  std::string reason;                            // why a path is off ("" when all are on)

  bool takes(device::DType t) const { return t == device::DType::kBF16 ? bf16 : t == device::DType::kF16 && f16; }
  // The log line: "tensor cores: mma.sync bf16/f16 tf32" or
  // "no tensor cores (<reason>): float32-accumulating GEMM".
  std::string describe() const;
};

bool is_nvidia(const device::DeviceInfo& device);
bool is_ptx_program(std::string_view name);

// The probe's result for `device`, probing on first call (thread-safe). The probe kernels run in a
// context of their own, so a faulting one cannot break the caller's.
const TensorCores& probe_tensor_cores(const device::DeviceInfo& device, device::ProgramCache& cache);

// Builds the embedded PTX program `name` (load_program with -DPAX_NVIDIA_PTX). Throws
// std::logic_error on a device that is not NVIDIA's: callers probe first.
device::Program load_ptx_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                                 std::string_view extra_options);

}  // namespace paxocl::kernels
