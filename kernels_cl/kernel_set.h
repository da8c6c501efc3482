// KernelSet: the kernels of one embedded program on one device, and a 1-D launcher. The typed
// launcher classes (Elementwise, LayerNormKernels, ...) hold one each and state shapes.
#pragma once

#include <array>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"
#include "device/device.h"
#include "device/program_cache.h"

namespace paxocl::kernels {

// A size as the cl_uint kernels take; throws if it does not fit.
inline cl_uint u32(std::size_t n) {
  if (n > std::numeric_limits<cl_uint>::max()) throw DeviceError("kernel argument exceeds 2^32-1: " + std::to_string(n));
  return static_cast<cl_uint>(n);
}

// Kernel variants per device class: a program "x" may have a CPU-shaped twin "x_cpu" (explicit
// vectors, a row or 16 elements per work-item, for PoCL) with the same kernels and arguments.
// CPU devices use it unless PAX_OCL_KERNELS=portable; every other device uses the portable one.
inline constexpr const char* kKernelVariantEnvVar = "PAX_OCL_KERNELS";
inline constexpr std::size_t kCpuElementsPerItem = 16;  // element-wise CPU kernels: float16 per item

class KernelSet {
 public:
  KernelSet(device::ProgramCache& cache, device::Device& device, std::string_view program,
            std::initializer_list<const char*> kernel_names, std::string_view extra_options = "");
  // The kernels of a program built elsewhere (load_ptx_program); never the CPU variant.
  KernelSet(device::Device& device, device::Program program, std::initializer_list<const char*> kernel_names);

  bool cpu_variant() const { return cpu_variant_; }

  // Element-wise kernels: `n` elements, 16 per work-item in the CPU variant, 1 otherwise.
  template <typename... Args>
  device::Event launch_elements(std::string_view kernel, std::size_t n, const Args&... args) {
    return launch(kernel, cpu_variant_ ? (n + kCpuElementsPerItem - 1) / kCpuElementsPerItem : n, args...);
  }

  // Runs `kernel` over `items` work-items (rounded up to whole groups; kernels guard the tail).
  template <typename... Args>
  device::Event launch(std::string_view kernel, std::size_t items, const Args&... args) {
    device::Kernel& k = find(kernel);
    k.set_args(args...);
    constexpr std::size_t kGroup = 64;
    const std::array<std::size_t, 1> global = {std::max<std::size_t>(1, (items + kGroup - 1) / kGroup) * kGroup};
    return device_.queue().launch(k, global);
  }

  // Runs `kernel` over an explicit N-D range with an explicit work-group shape.
  template <typename... Args>
  device::Event launch_nd(std::string_view kernel, std::span<const std::size_t> global,
                          std::span<const std::size_t> local, const Args&... args) {
    device::Kernel& k = find(kernel);
    k.set_args(args...);
    return device_.queue().launch(k, global, local);
  }

  device::Device& device() const { return device_; }

 private:
  device::Kernel& find(std::string_view name);

  device::Device& device_;
  bool cpu_variant_ = false;
  device::Program program_;
  std::vector<device::Kernel> kernels_;
};

}  // namespace paxocl::kernels
