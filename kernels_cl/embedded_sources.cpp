#include "kernels_cl/embedded_sources.h"

#include <string>

#include "common/errors.h"

namespace paxocl::kernels {

std::string_view embedded_source(std::string_view name) {
  std::string known;
  for (const EmbeddedSource& s : embedded_sources()) {
    if (s.name == name) return s.source;
    known += (known.empty() ? "" : ", ") + std::string(s.name);
  }
  throw DeviceError("no embedded OpenCL program named '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace paxocl::kernels
