#include "kernels_cl/device_runtime.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/announce_once.h"
#include "common/errors.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/tensor_core_gemm.h"

namespace paxocl::kernels {

namespace {

// Every operand mix a model runs: 16-bit activations and weights (forward, dx), 16-bit inputs
// with a float32 C (dW, the LM head's logits), and where attention runs as GEMMs (not as the
// host's flash attention, whose products are its own) float32 probabilities or score gradients
// times 16-bit values, which oneDNN 2.6 has no CPU matmul for.
void require_gemm_dtypes(const Gemm& gemm, const device::DeviceInfo& device, device::DType a) {
  const device::DType f = device::DType::kF32;
  if (!gemm.supports(a, a, a) || !gemm.supports(a, a, f)) {
    throw ConfigError(fmt::format("GEMM '{}' does not take {} operands (FPROP_DTYPE); use auto or a pax-ocl GEMM "
                                  "(cpu-8x48, cpu-12x32, gpu-64x64)",
                                  gemm.name(), device::dtype_name(a)));
  }
  if (uses_cpu_flash_attention(device) || gemm.supports(f, a, a)) return;
  throw ConfigError(fmt::format("GEMM '{}' has no float32 x {} product, which attention runs as a GEMM on {} ({}); "
                                "use --gemm=auto, or let attention run as the host's flash attention",
                                gemm.name(), device::dtype_name(a), device.name, cpu_flash_refusal(device)));
}

}  // namespace

DeviceRuntime::DeviceRuntime(device::Device& device, device::ProgramCache& cache, device::DType act,
                             const std::string& gemm_policy, MatmulPrecision precision)
    : device_(device), kernels_(cache, device, act), gemm_(make_gemm(device, cache, gemm_policy, precision)) {
  require_gemm_dtypes(*gemm_, device.info(), act);
  // Once per device: a process may build several runtimes on one (training, evaluation, sampling).
  if (!announce_once(fmt::format("kernel set {}", fmt::ptr(device.info().id)))) return;
  const KernelVariant set = requested_variant(device.info());
  spdlog::info("Kernels on {}: the {} set ({}{})", device.info().name, to_string(set),
               requested_variant_reason(device.info()),
               set == KernelVariant::kGpu ? fmt::format("; work-groups of {}, flash attention in {} KiB of local memory",
                                                        gpu_group_size(device.info()),
                                                        std::min<std::uint64_t>(device.info().local_mem_bytes,
                                                                                kFlashLocalBudget) / 1024)
                                          : std::string());
}

bool DeviceRuntime::float32_on_tensor_cores() const {
  const auto* tc = dynamic_cast<const TensorCoreGemm*>(gemm_.get());
  return tc != nullptr && tc->on_tensor_cores(device::DType::kF32, device::DType::kF32);
}

}  // namespace paxocl::kernels
