// The OpenCL C sources of kernels_cl/*.cl, embedded into the binary at build time
// (cmake/EmbedKernels.cmake), so the binary runs from any directory and always carries the
// sources it was built from. Each is named by its file stem ("elementwise").
#pragma once

#include <span>
#include <string_view>

namespace paxocl::kernels {

struct EmbeddedSource {
  std::string_view name;
  std::string_view source;
};

std::span<const EmbeddedSource> embedded_sources();
// The source named `name`; throws DeviceError listing the known names if there is none.
std::string_view embedded_source(std::string_view name);

}  // namespace paxocl::kernels
