// InFile: a regular file opened for reading at explicit offsets (pread), so one reader can serve
// random access without a shared position. Every error (cannot open, not a regular file (a FIFO or
// device is refused without blocking: common/regular_file.h), a read error, an end of file before
// `bytes`) is a FileError naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "common/unique_fd.h"

namespace paxocl {

class InFile {
 public:
  explicit InFile(const std::filesystem::path& file);
  std::uint64_t size() const { return size_; }
  // Reads exactly `bytes` at `offset` into `dst`.
  void read(std::uint64_t offset, void* dst, std::size_t bytes) const;
  const std::filesystem::path& path() const { return file_; }

 private:
  std::filesystem::path file_;
  UniqueFd fd_;
  std::uint64_t size_ = 0;
};

}  // namespace paxocl
