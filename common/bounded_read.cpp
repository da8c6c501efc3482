#include "common/bounded_read.h"

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace paxocl {

std::string read_file_bounded(const std::filesystem::path& file, std::size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot be read");
  std::string bytes;
  char chunk[1 << 16];
  // Chunked rather than sized from the file: a FIFO or /proc file reports no size.
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    bytes.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > max_bytes) throw std::invalid_argument(fmt::format("larger than {} bytes", max_bytes));
  }
  if (in.bad()) throw std::invalid_argument("read error");
  return bytes;
}

}  // namespace paxocl
