#include "kernels_cl/program_loader.h"

#include "kernels_cl/embedded_sources.h"

namespace paxocl::kernels {

device::Program load_program(device::ProgramCache& cache, const device::Device& device, std::string_view name) {
  return cache.build(device.context(), device.info(), name, embedded_source(name), kBuildOptions);
}

}  // namespace paxocl::kernels
