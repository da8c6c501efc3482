#include "device/auto_fprop_dtype.h"

#include <algorithm>

#include <fmt/format.h>

#include "device/device.h"

namespace paxocl::device {

AutoFpropDtype auto_fprop_dtype(const std::vector<DeviceInfo>& devices, const std::string& gemm_policy,
                                const Bf16GemmProbe& measure) {
  if (devices.empty()) return {DType::kF32, "no devices"};
  if (gemm_policy == "blis" || gemm_policy == "clblast") {
    return {DType::kF32, fmt::format("--gemm={} multiplies float32 only", gemm_policy)};
  }
  if (gemm_policy != "auto" && gemm_policy != "onednn") {
    return {DType::kF32, fmt::format("--gemm={} widens 16-bit operands: bfloat16 would save memory, not time",
                                     gemm_policy)};
  }
  const auto without = std::find_if(devices.begin(), devices.end(), [](const DeviceInfo& d) {
    return d.kind != DeviceKind::kCpu || d.bf16_flops_per_cycle == 0;
  });
  if (without != devices.end()) {
    if (without->kind != DeviceKind::kCpu) {
      return {DType::kF32, fmt::format("{} is not a CPU device: GPUs run float32 unless FPROP_DTYPE names a 16-bit "
                                       "dtype", without->name)};
    }
    return {DType::kF32, fmt::format("{} has no bfloat16 matrix instructions (AMX-BF16, AVX512_BF16)", without->name)};
  }
  const auto no_native = std::find_if(devices.begin(), devices.end(), [](const DeviceInfo& d) { return !d.native_kernels; });
  if (no_native != devices.end()) {
    return {DType::kF32, fmt::format("{} runs no native kernels, so no host GEMM multiplies bfloat16 there",
                                     no_native->name)};
  }
  // Each CPU device gets its share of the host's threads (kernels::host_gemm_threads), shared also
  // with the job's other processes on this host, which probe at the same time.
  const unsigned sharers = static_cast<unsigned>(devices.size()) * OpenCpuDevice::job_processes_on_host();
  const unsigned threads = std::max(1u, std::max(1u, devices.front().compute_units) / sharers);
  const Bf16GemmRates rates = measure(threads);
  const std::string isa = fmt::format("{} bfloat16 FLOPs per core per cycle by its instructions",
                                      devices.front().bf16_flops_per_cycle);
  if (rates.bf16_gflops <= 0 || rates.f32_gflops <= 0) {
    return {DType::kF32, fmt::format("{}, but no bfloat16 GEMM without widening here: {}", isa, rates.what)};
  }
  const double speedup = rates.bf16_gflops / rates.f32_gflops;
  const std::string measured =
      fmt::format("bfloat16 GEMMs measured at {:.2f}x float32's ({:.0f} against {:.0f} GFLOP/s, {})", speedup,
                  rates.bf16_gflops, rates.f32_gflops, rates.what);
  if (speedup < kBf16MinGemmSpeedup) {
    return {DType::kF32, fmt::format("{}, but {}: bfloat16 needs {:.1f}x", isa, measured, kBf16MinGemmSpeedup)};
  }
  return {DType::kBF16, fmt::format("CPU device(s) with bfloat16 matrix instructions (AMX-BF16 or AVX512_BF16, {}); {}",
                                    isa, measured)};
}

}  // namespace paxocl::device
