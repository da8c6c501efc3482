#include "kernels_cl/kernel_set.h"

#include <cstdlib>
#include <cstring>

#include "kernels_cl/embedded_sources.h"
#include "kernels_cl/program_loader.h"

namespace paxocl::kernels {

namespace {
bool use_cpu_variant(const device::Device& device, std::string_view program) {
  if (device.info().kind != device::DeviceKind::kCpu) return false;
  if (const char* v = std::getenv(kKernelVariantEnvVar); v != nullptr && std::strcmp(v, "portable") == 0) return false;
  const std::string twin = std::string(program) + "_cpu";
  for (const EmbeddedSource& s : embedded_sources()) {
    if (s.name == twin) return true;
  }
  return false;
}
}  // namespace

KernelSet::KernelSet(device::ProgramCache& cache, device::Device& device, std::string_view program,
                     std::initializer_list<const char*> kernel_names, std::string_view extra_options)
    : device_(device),
      cpu_variant_(use_cpu_variant(device, program)),
      program_(load_program(cache, device, cpu_variant_ ? std::string(program) + "_cpu" : std::string(program),
                            extra_options)) {
  for (const char* name : kernel_names) kernels_.emplace_back(program_, name);
}

KernelSet::KernelSet(device::Device& device, device::Program program, std::initializer_list<const char*> kernel_names)
    : device_(device), program_(std::move(program)) {
  for (const char* name : kernel_names) kernels_.emplace_back(program_, name);
}

device::Kernel& KernelSet::find(std::string_view name) {
  for (device::Kernel& k : kernels_) {
    if (k.name() == name) return k;
  }
  throw DeviceError("kernel '" + std::string(name) + "' is not part of program '" + program_.name() + "'");
}

}  // namespace paxocl::kernels
