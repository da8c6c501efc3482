#include "common/in_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl {

InFile::InFile(const std::filesystem::path& file) : file_(file) {
  OpenedFile opened = open_regular_file(file);
  if (!opened.fd.valid()) throw FileError(file_, opened.refused);
  fd_ = std::move(opened.fd);
  size_ = opened.size;
}

void InFile::read(std::uint64_t offset, void* dst, std::size_t bytes) const {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_.get(), p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw FileError(file_, fmt::format("read error at byte {}: {}", offset, std::strerror(errno)));
    if (n == 0) throw FileError(file_, fmt::format("unexpected end of file at byte {}", offset));
    p += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

}  // namespace paxocl
