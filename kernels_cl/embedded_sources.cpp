#include "kernels_cl/embedded_sources.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl::kernels {

std::string_view embedded_source(std::string_view name) {
  std::string known;
  for (const EmbeddedSource& s : embedded_sources()) {
    if (s.name == name) return s.source;
    known += (known.empty() ? "" : ", ") + std::string(s.name);
  }
  throw DeviceError("no embedded OpenCL program named '" + std::string(name) + "' (known: " + known + ")");
}

namespace {
// PAX_OCL_KERNEL_SOURCE_DIR, or nullptr when it is unset or empty (the embedded sources).
const char* source_dir() {
  const char* dir = std::getenv(kKernelSourceDirEnvVar);
  return dir == nullptr || *dir == '\0' ? nullptr : dir;
}

std::filesystem::path source_file(const char* dir, std::string_view name) {
  return std::filesystem::path(dir) / (std::string(name) + ".cl");
}
}  // namespace

std::string program_source_origin(std::string_view name) {
  const char* dir = source_dir();
  return dir == nullptr ? "" : std::string(kKernelSourceDirEnvVar) + "'s " + source_file(dir, name).string();
}

std::string program_source(std::string_view name) {
  const std::string_view embedded = embedded_source(name);  // unknown names fail alike either way
  const char* dir = source_dir();
  if (dir == nullptr) return std::string(embedded);
  if (const std::string why = why_not_directory(dir); !why.empty()) {
    throw DeviceError(std::string(kKernelSourceDirEnvVar) + "=" + dir + ": " + why + "; unset it or name the kernels_cl/ directory");
  }
  const std::filesystem::path file = source_file(dir, name);
  if (const std::string why = why_not_regular_file(file); !why.empty()) {  // a FIFO would block the open below
    throw DeviceError(std::string(kKernelSourceDirEnvVar) + " is set but OpenCL program '" + std::string(name) +
                      "' cannot be read from " + file.string() + ": " + why);
  }
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
