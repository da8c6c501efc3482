// Reading a whole untrusted file into memory, refusing it past a size cap: manifests, experiment
// files and headers are read this way, so a hostile or corrupt file cannot demand unbounded memory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace paxocl {

// The bytes of `file`, a regular file (a FIFO or device is refused without blocking:
// common/regular_file.h). Throws std::invalid_argument with the reason ("cannot open for reading:
// ...", "is a FIFO, not a regular file", "larger than N bytes", "read error"); callers wrap it in
// their own error naming the file and what it should be.
std::string read_file_bounded(const std::filesystem::path& file, std::size_t max_bytes);

}  // namespace paxocl
