#include "kernels_cl/program_loader.h"

#include "kernels_cl/embedded_sources.h"

namespace paxocl::kernels {

device::Program load_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                             std::string_view extra_options) {
  std::string options(kBuildOptions);
  if (!extra_options.empty()) options.append(" ").append(extra_options);
  return cache.build(device.context(), device.info(), name, embedded_source(name), options);
}

}  // namespace paxocl::kernels
