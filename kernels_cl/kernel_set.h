// KernelSet: the kernels of one embedded program on one device, and its launchers. The typed
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

// Kernel variants per device class. A program "x" (the portable set: one work-item per element or
// per row) may have twins with the same kernels and arguments but another launch geometry:
//   x_cpu.cl  CPU-shaped (explicit vectors, a row or 16 elements per work-item, for PoCL);
//   x_gpu.cl  GPU-shaped (a work-group of group_size() work-items per row or per block of rows,
//             reductions in local memory in a fixed order), built with -DPAX_WG=<group size>.
// PAX_OCL_KERNELS picks the set: auto (default: CPU devices the CPU twins, every other device the
// GPU twins), portable, cpu or gpu, on any device; a program without the chosen twin is built
// portable. PAX_OCL_GPU_GROUP_SIZE sets the GPU twins' work-group size (a power of two from 32 to
// 1024 that the device allows; default min(256, the device's maximum)).
enum class KernelVariant { kPortable, kCpu, kGpu };
inline constexpr const char* kKernelVariantEnvVar = "PAX_OCL_KERNELS";
inline constexpr const char* kGpuGroupSizeEnvVar = "PAX_OCL_GPU_GROUP_SIZE";
inline constexpr std::size_t kCpuElementsPerItem = 16;  // element-wise CPU kernels: float16 per item
inline constexpr std::size_t kGpuElementsPerItem = 4;   // element-wise GPU kernels: float4 per item
inline constexpr std::size_t kGpuDefaultGroupSize = 256;  // the GPU twins' work-group size unless set
// Work-items per row of the GPU twins' norms (-DPAX_ROW_TEAM, group_reduce.cl): a warp; the
// smallest group size (32) is one team.
inline constexpr std::size_t kGpuRowTeam = 32;

// The variant set PAX_OCL_KERNELS asks for on `device` (before falling back to portable where a
// program has no such twin); ConfigError naming the valid values for anything else.
KernelVariant requested_variant(const device::DeviceInfo& device);
// Why requested_variant chose its set, for the log: "PAX_OCL_KERNELS=gpu" or "auto: a CPU device" (unset or auto).
std::string requested_variant_reason(const device::DeviceInfo& device);
// The embedded program `program` runs as on `device`: "x_cpu", "x_gpu" or "x" (no such twin, or
// the portable set asked for).
std::string program_variant_name(const device::DeviceInfo& device, std::string_view program);
// The GPU twins' work-group size on `device` (PAX_OCL_GPU_GROUP_SIZE or the default); ConfigError
// for a value that is not a power of two in [32, min(1024, the device's maximum)].
std::size_t gpu_group_size(const device::DeviceInfo& device);
const char* to_string(KernelVariant variant);  // "portable", "cpu", "gpu"

class KernelSet {
 public:
  KernelSet(device::ProgramCache& cache, device::Device& device, std::string_view program,
            std::initializer_list<const char*> kernel_names, std::string_view extra_options = "");
  // The kernels of a program built elsewhere (load_ptx_program); always the portable variant.
  KernelSet(device::Device& device, device::Program program, std::initializer_list<const char*> kernel_names);

  KernelVariant variant() const { return variant_; }
  bool cpu_variant() const { return variant_ == KernelVariant::kCpu; }
  bool gpu_variant() const { return variant_ == KernelVariant::kGpu; }
  // Work-items per group of the GPU twin (its PAX_WG); 0 for the other variants.
  std::size_t group_size() const { return group_size_; }

  // Element-wise kernels: `n` elements, 16 per work-item in the CPU variant, 4 in the GPU one, 1
  // in the portable one.
  template <typename... Args>
  device::Event launch_elements(std::string_view kernel, std::size_t n, const Args&... args) {
    return launch(kernel, element_items(n), args...);
  }
  // Work-items for n elements of an element-wise kernel in this set.
  std::size_t element_items(std::size_t n) const {
    const std::size_t per_item = cpu_variant() ? kCpuElementsPerItem : gpu_variant() ? kGpuElementsPerItem : 1;
    return (n + per_item - 1) / per_item;
  }

  // Runs `kernel` over `items` work-items (rounded up to whole groups; kernels guard the tail).
  template <typename... Args>
  device::Event launch(std::string_view kernel, std::size_t items, const Args&... args) {
    device::Kernel& k = find(kernel);
    k.set_args(args...);
    const std::size_t group = gpu_variant() ? group_size_ : 64;
    const std::array<std::size_t, 1> global = {std::max<std::size_t>(1, (items + group - 1) / group) * group};
    if (!gpu_variant()) return device_.queue().launch(k, global);
    const std::array<std::size_t, 1> local = {group};
    return device_.queue().launch(k, global, local);
  }

  // GPU twin: `groups` work-groups of group_size() work-items each (a group per row, or per block);
  // at least one, so kernels guard their group index (uniformly, before any barrier).
  template <typename... Args>
  device::Event launch_groups(std::string_view kernel, std::size_t groups, const Args&... args) {
    device::Kernel& k = find(kernel);
    k.set_args(args...);
    const std::array<std::size_t, 1> global = {std::max<std::size_t>(1, groups) * group_size_};
    const std::array<std::size_t, 1> local = {group_size_};
    return device_.queue().launch(k, global, local);
  }

  // A kernel with a work-item per row in the portable and CPU sets, and in the GPU set a team of
  // kGpuRowTeam work-items per row, group_size() / kGpuRowTeam rows per work-group (the norms).
  template <typename... Args>
  device::Event launch_row_teams(std::string_view kernel, std::size_t rows, const Args&... args) {
    if (!gpu_variant()) return launch(kernel, rows, args...);
    const std::size_t rows_per_group = group_size_ / kGpuRowTeam;
    return launch_groups(kernel, (rows + rows_per_group - 1) / rows_per_group, args...);
  }

  // A kernel with a work-item per row in the portable and CPU sets and a work-group per row in the GPU set.
  template <typename... Args>
  device::Event launch_rows(std::string_view kernel, std::size_t rows, const Args&... args) {
    return gpu_variant() ? launch_groups(kernel, rows, args...) : launch(kernel, rows, args...);
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
  // Creates the program's kernel `name`; DeviceError naming the file when a PAX_OCL_KERNEL_SOURCE_DIR
  // copy lacks it.
  device::Kernel& add_kernel(std::string_view name);

  device::Device& device_;
  KernelVariant variant_ = KernelVariant::kPortable;
  std::size_t group_size_ = 0;
  device::Program program_;
  std::vector<device::Kernel> kernels_;
};

}  // namespace paxocl::kernels
