// AtomicFile: a file that appears whole or not at all. Bytes go to `<file>.tmp.<pid>.<n>` (n counts
// AtomicFiles in this process, so threads writing the same file never share one); commit()
// fsyncs it, renames it onto `file` and fsyncs the directory, so a reader (or a crash, or a full
// disk) never leaves a partial file under the final name. Without commit() (an exception on the
// way) the temporary file is removed and `file` is untouched. Every error is a DataError naming the
// file and the system's reason (e.g. "No space left on device"). Every file of the project that
// must appear whole is written through it (directory swaps are the callers': inputs/dataset.cpp,
// checkpoint/checkpoint_dir.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace paxocl {

class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& file);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* src, std::size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();
  std::uint64_t size() const { return size_; }   // bytes written so far
  std::uint32_t crc32c() const { return crc_; }  // of those bytes

 private:
  std::filesystem::path file_, tmp_;
  UniqueFd fd_;
  bool committed_ = false;
  std::uint64_t size_ = 0;
  std::uint32_t crc_ = 0;
};

// Writes `text` to `file` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& file, std::string_view text);

// Why write_file_atomically(file, ...) would fail before it writes anything, as a clause without
// the path ("its directory /x does not exist", "is a directory", "its directory /x is not writable:
// Permission denied"); empty when it can be written. For outputs a long job writes at its end,
// checked at its start.
std::string why_cannot_write(const std::filesystem::path& file);

// fsync of a directory, so that renames and new entries in it are durable (best effort: the data
// itself is already synced).
void sync_directory(const std::filesystem::path& dir);

}  // namespace paxocl
