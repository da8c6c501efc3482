#include "kernels_cl/embedded_sources.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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

std::string program_source(std::string_view name) {
  const std::string_view embedded = embedded_source(name);  // unknown names fail alike either way
  const char* dir = std::getenv(kKernelSourceDirEnvVar);
  if (dir == nullptr || *dir == '\0') return std::string(embedded);
  const std::filesystem::path file = std::filesystem::path(dir) / (std::string(name) + ".cl");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw DeviceError(std::string(kKernelSourceDirEnvVar) + " is set but OpenCL program '" + std::string(name) +
                      "' cannot be read from " + file.string() + ": " +
                      (err != 0 ? std::strerror(err) : "cannot open"));
  }
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DeviceError("error reading OpenCL program source " + file.string());
  return source;
}

}  // namespace paxocl::kernels
