// The OpenCL C sources of kernels_cl/*.cl, embedded into the binary at build time
// (cmake/EmbedKernels.cmake), so the binary runs from any directory and always carries the
// sources it was built from. Each is named by its file stem ("elementwise").
//
// What gets built is program_source(name): the embedded copy, unless PAX_OCL_KERNEL_SOURCE_DIR
// names a directory, in which case <dir>/<name>.cl is read instead (every time a program is
// loaded). That lets a kernel be tried or mutated (scripts/mutation_check.sh) without a rebuild;
// the set of programs, and which have a CPU twin, stays the embedded one.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace paxocl::kernels {

inline constexpr const char* kKernelSourceDirEnvVar = "PAX_OCL_KERNEL_SOURCE_DIR";

struct EmbeddedSource {
  std::string_view name;
  std::string_view source;
};

std::span<const EmbeddedSource> embedded_sources();
// The embedded source named `name`; throws DeviceError listing the known names if there is none.
std::string_view embedded_source(std::string_view name);

// The source to build for program `name`: <$PAX_OCL_KERNEL_SOURCE_DIR>/<name>.cl when that variable
// is set and not empty, else embedded_source(name). Throws DeviceError for an unknown name (as
// embedded_source) and, with the variable set, a one-line DeviceError naming the file that cannot
// be read.
std::string program_source(std::string_view name);
// Where program `name`'s source comes from, for error messages: "PAX_OCL_KERNEL_SOURCE_DIR's
// <dir>/<name>.cl" when the variable is set and not empty, else "" (the embedded copy).
std::string program_source_origin(std::string_view name);

}  // namespace paxocl::kernels
