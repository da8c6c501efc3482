#include "kernels_cl/kernel_set.h"

#include "kernels_cl/program_loader.h"

namespace paxocl::kernels {

KernelSet::KernelSet(device::ProgramCache& cache, device::Device& device, std::string_view program,
                     std::initializer_list<const char*> kernel_names, std::string_view extra_options)
    : device_(device), program_(load_program(cache, device, program, extra_options)) {
  for (const char* name : kernel_names) kernels_.emplace_back(program_, name);
}

device::Kernel& KernelSet::find(std::string_view name) {
  for (device::Kernel& k : kernels_) {
    if (k.name() == name) return k;
  }
  throw DeviceError("kernel '" + std::string(name) + "' is not part of program '" + program_.name() + "'");
}

}  // namespace paxocl::kernels
