#include "common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl {

namespace {

const char* type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

// "" when stat(2) finds `path` with a mode `want` accepts; else the clause naming what it is.
std::string why_not(const std::filesystem::path& path, bool (*want)(mode_t), const char* wanted) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? std::string("no such file or directory") : fmt::format("cannot be examined: {}", std::strerror(errno));
  }
  if (want(st.st_mode)) return {};
  return fmt::format("is {}, not {}", type_name(st.st_mode), wanted);
}

}  // namespace

std::string why_not_regular_file(const std::filesystem::path& file) {
  return why_not(file, [](mode_t m) { return S_ISREG(m); }, "a regular file");
}

std::string why_not_directory(const std::filesystem::path& dir) {
  return why_not(dir, [](mode_t m) { return S_ISDIR(m); }, "a directory");
}

void require_regular_file(const std::filesystem::path& file) {
  if (std::string why = why_not_regular_file(file); !why.empty()) throw FileError(file, why);
}

void require_directory(const std::filesystem::path& dir) {
  if (std::string why = why_not_directory(dir); !why.empty()) throw FileError(dir, why);
}

OpenedFile open_regular_file(const std::filesystem::path& file) {
  OpenedFile out;
  // A check by name first, so a device is refused without being opened (opening some has effects).
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    out.refused = fmt::format("is {}, not a regular file", type_name(st.st_mode));
    return out;
  }
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    out.refused = fmt::format("cannot open for reading: {}; check the path", std::strerror(errno));
    return out;
  }
  if (::fstat(fd.get(), &st) != 0) {
    out.refused = fmt::format("cannot be read: {}", std::strerror(errno));
    return out;
  }
  if (!S_ISREG(st.st_mode)) {  // swapped since the check above
    out.refused = fmt::format("is {}, not a regular file", type_name(st.st_mode));
    return out;
  }
  // Regular files ignore O_NONBLOCK today; cleared so reads keep their ordinary meaning regardless.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    out.refused = fmt::format("cannot be read: {}", std::strerror(errno));
    return out;
  }
  out.fd = std::move(fd);
  out.size = static_cast<std::uint64_t>(st.st_size);
  return out;
}

bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

}  // namespace paxocl
