#include "common/bounded_read.h"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>

#include "common/regular_file.h"

namespace paxocl {

std::string read_file_bounded(const std::filesystem::path& file, std::size_t max_bytes) {
  const OpenedFile in = open_regular_file(file);
  if (!in.fd.valid()) throw std::invalid_argument(in.refused);
  std::string bytes;
  char chunk[1 << 16];
  // Chunked rather than sized from the file: a /proc file reports no size, and a file may grow meanwhile.
  for (;;) {
    const ssize_t n = ::read(in.fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::invalid_argument("read error");
    if (n == 0) return bytes;
    bytes.append(chunk, static_cast<std::size_t>(n));
    if (bytes.size() > max_bytes) throw std::invalid_argument(fmt::format("larger than {} bytes", max_bytes));
  }
}

}  // namespace paxocl
