#include "kernels_cl/kernel_set.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "common/whole_number.h"
#include "kernels_cl/embedded_sources.h"
#include "kernels_cl/program_loader.h"

namespace paxocl::kernels {

namespace {
bool has_twin(std::string_view program, KernelVariant variant) {
  const std::string twin = std::string(program) + (variant == KernelVariant::kCpu ? "_cpu" : "_gpu");
  for (const EmbeddedSource& s : embedded_sources()) {
    if (s.name == twin) return true;
  }
  return false;
}

KernelVariant variant_for(const device::DeviceInfo& device, std::string_view program) {
  const KernelVariant wanted = requested_variant(device);
  if (wanted == KernelVariant::kPortable || !has_twin(program, wanted)) return KernelVariant::kPortable;
  return wanted;
}

std::string program_name(std::string_view program, KernelVariant variant) {
  switch (variant) {
    case KernelVariant::kCpu: return std::string(program) + "_cpu";
    case KernelVariant::kGpu: return std::string(program) + "_gpu";
    case KernelVariant::kPortable: break;
  }
  return std::string(program);
}

std::string build_options(const device::Device& device, KernelVariant variant, std::string_view extra) {
  std::string options(extra);
  if (variant == KernelVariant::kGpu) {
    options += fmt::format("{}-DPAX_WG={} -DPAX_ROW_TEAM={}", options.empty() ? "" : " ", gpu_group_size(device.info()),
                           kGpuRowTeam);
  }
  return options;
}
}  // namespace

const char* to_string(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::kCpu: return "cpu";
    case KernelVariant::kGpu: return "gpu";
    case KernelVariant::kPortable: break;
  }
  return "portable";
}

KernelVariant requested_variant(const device::DeviceInfo& device) {
  const char* v = std::getenv(kKernelVariantEnvVar);
  const std::string value = v == nullptr ? "" : v;
  if (value.empty() || value == "auto") {
    return device.kind == device::DeviceKind::kCpu ? KernelVariant::kCpu : KernelVariant::kGpu;
  }
  if (value == "portable") return KernelVariant::kPortable;
  if (value == "cpu") return KernelVariant::kCpu;
  if (value == "gpu") return KernelVariant::kGpu;
  throw ConfigError(fmt::format("{}={} is not a kernel set; use auto, portable, cpu or gpu", kKernelVariantEnvVar, value));
}

std::string requested_variant_reason(const device::DeviceInfo& device) {
  const char* v = std::getenv(kKernelVariantEnvVar);
  const std::string value = v == nullptr ? "" : v;
  if (!value.empty() && value != "auto") return fmt::format("{}={}", kKernelVariantEnvVar, value);
  return device.kind == device::DeviceKind::kCpu ? "auto: a CPU device" : "auto: not a CPU device";
}

std::string program_variant_name(const device::DeviceInfo& device, std::string_view program) {
  return program_name(program, variant_for(device, program));
}

std::size_t gpu_group_size(const device::DeviceInfo& device) {
  const std::size_t device_max = std::max<std::size_t>(1, device.max_work_group_size);
  const std::size_t limit = std::min<std::size_t>(1024, device_max);
  const char* v = std::getenv(kGpuGroupSizeEnvVar);
  if (v == nullptr || *v == '\0') return std::min(kGpuDefaultGroupSize, device_max);
  const std::optional<unsigned long long> parsed = parse_whole_number(v);
  const unsigned long long size = parsed.value_or(0);
  if (size < 32 || size > limit || (size & (size - 1)) != 0) {
    throw ConfigError(fmt::format("{}={}: the GPU kernels' work-group size must be a power of two from 32 to {} "
                                  "(this device's limit)",
                                  kGpuGroupSizeEnvVar, v, limit));
  }
  return static_cast<std::size_t>(size);
}

KernelSet::KernelSet(device::ProgramCache& cache, device::Device& device, std::string_view program,
                     std::initializer_list<const char*> kernel_names, std::string_view extra_options)
    : device_(device),
      variant_(variant_for(device.info(), program)),
      group_size_(variant_ == KernelVariant::kGpu ? gpu_group_size(device.info()) : 0),
      program_(load_program(cache, device, program_name(program, variant_),
                            build_options(device, variant_, extra_options))) {
  for (const char* name : kernel_names) add_kernel(name);
}

KernelSet::KernelSet(device::Device& device, device::Program program, std::initializer_list<const char*> kernel_names)
    : device_(device), program_(std::move(program)) {
  for (const char* name : kernel_names) kernels_.emplace_back(program_, name);
}

device::Kernel& KernelSet::find(std::string_view name) {
  for (device::Kernel& k : kernels_) {
    if (k.name() == name) return k;
  }
  // A kernel only one variant has (a GPU twin's second pass): created on its first launch.
  return add_kernel(name);
}

device::Kernel& KernelSet::add_kernel(std::string_view name) {
  try {
    return kernels_.emplace_back(program_, std::string(name));
  } catch (const device::ClError& e) {
    // The embedded sources define every kernel; a copy in PAX_OCL_KERNEL_SOURCE_DIR may not.
    const std::string origin = program_source_origin(program_.name());
    if (e.code() != CL_INVALID_KERNEL_NAME || origin.empty()) throw;
    throw DeviceError(fmt::format("{} defines no kernel '{}' (not a copy of kernels_cl/{}.cl?); unset {} or restore "
                                  "the file",
                                  origin, name, program_.name(), kKernelSourceDirEnvVar));
  }
}

}  // namespace paxocl::kernels
