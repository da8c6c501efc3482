#include "fuzz/open_log.h"

#include <fcntl.h>
#include <sys/types.h>

#include <cstdarg>

namespace paxocl::fuzz {
namespace {
std::vector<std::filesystem::path>& opened() {
  static std::vector<std::filesystem::path> paths;
  return paths;
}
}  // namespace

std::vector<std::filesystem::path> take_opened_paths() {
  std::vector<std::filesystem::path> out;
  out.swap(opened());
  return out;
}

}  // namespace paxocl::fuzz

// The linker's names for the wrapped and the real open (ld --wrap=open).
extern "C" int __real_open(const char* path, int flags, ...);  // NOLINT(bugprone-reserved-identifier)

extern "C" int __wrap_open(const char* path, int flags, ...) {  // NOLINT(bugprone-reserved-identifier)
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {  // only then is there a mode argument
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  paxocl::fuzz::opened().emplace_back(path);
  return __real_open(path, flags, mode);
}
