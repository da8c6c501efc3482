#include "device/auto_fprop_dtype.h"

#include <algorithm>

#include <fmt/format.h>

namespace paxocl::device {

AutoFpropDtype auto_fprop_dtype(const std::vector<DeviceInfo>& devices, const std::string& gemm_policy) {
  if (devices.empty()) return {DType::kF32, "no devices"};
  if (gemm_policy == "blis" || gemm_policy == "clblast") {
    return {DType::kF32, fmt::format("--gemm={} multiplies float32 only", gemm_policy)};
  }
  const auto without = std::find_if(devices.begin(), devices.end(), [](const DeviceInfo& d) {
    return d.kind != DeviceKind::kCpu || d.bf16_flops_per_cycle == 0;
  });
  if (without == devices.end()) {
    return {DType::kBF16, fmt::format("CPU device(s) with bfloat16 matrix instructions (AMX-BF16 or AVX512_BF16, {} "
                                      "bfloat16 FLOPs per core per cycle)",
                                      devices.front().bf16_flops_per_cycle)};
  }
  if (without->kind != DeviceKind::kCpu) {
    return {DType::kF32, fmt::format("{} is not a CPU device: GPUs run float32 unless FPROP_DTYPE names a 16-bit "
                                     "dtype", without->name)};
  }
  return {DType::kF32, fmt::format("{} has no bfloat16 matrix instructions (AMX-BF16, AVX512_BF16)", without->name)};
}

}  // namespace paxocl::device
