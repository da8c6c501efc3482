#include "kernels_cl/program_loader.h"

#include <string>

#include "kernels_cl/embedded_sources.h"

namespace paxocl::kernels {

device::Program load_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                             std::string_view extra_options) {
  std::string options(kBuildOptions);
  if (!extra_options.empty()) options.append(" ").append(extra_options);
  // Every program starts with the storage-type helpers; #line keeps compiler messages' line numbers.
  const std::string source = std::string(embedded_source("dtype")) + "\n#line 1\n" + std::string(embedded_source(name));
  return cache.build(device.context(), device.info(), name, source, options);
}

}  // namespace paxocl::kernels
