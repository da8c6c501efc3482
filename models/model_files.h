// Files for weights and checkpoints: reading at explicit offsets, atomic writing, and the
// safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then the data. Every error is a
// WeightsFileError naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "models/weights_io.h"

namespace paxocl::models::files {

namespace fs = std::filesystem;
using Shape = std::vector<std::int64_t>;

[[noreturn]] void fail(const fs::path& file, std::string_view what);

// Sizes from untrusted headers: a product that overflows saturates, so it can only fail a size check.
std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b);
std::uint64_t add_sat(std::uint64_t a, std::uint64_t b);
std::uint64_t elements(const Shape& shape);

// A regular file read at explicit offsets.
class InFile {
 public:
  explicit InFile(const fs::path& file);
  ~InFile();
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;
  std::uint64_t size() const { return size_; }
  void read(std::uint64_t offset, void* dst, std::size_t bytes) const;
  const fs::path& path() const { return file_; }

 private:
  fs::path file_;
  int fd_;
  std::uint64_t size_ = 0;
};

// Atomic writing lives in common/ (every layer needs it).
using AtomicOut = paxocl::AtomicFile;
using paxocl::sync_directory;

// A safetensors file whose header has been read and checked: at most kMaxHeaderBytes (the format's
// own cap) and 64 levels of JSON, dtypes known, shapes matching their byte ranges, which tile the
// data exactly (extras included). So every entry's bytes are really in the file.
class SafetensorsReader {
 public:
  struct Entry {
    std::string dtype;
    Shape shape;
    std::uint64_t begin = 0, end = 0;  // bytes, relative to the data
  };
  static constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{100} << 20;
  explicit SafetensorsReader(const fs::path& file);
  std::uint64_t data_bytes() const { return in_.size() - data_start_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const nlohmann::json& metadata() const { return metadata_; }  // "__metadata__" (null if none)
  void read(const Entry& entry, void* dst) const;
  std::vector<float> read_f32(const std::string& name) const;  // fails unless present and F32

 private:
  InFile in_;
  std::uint64_t data_start_ = 0;
  std::map<std::string, Entry> entries_;
  nlohmann::json metadata_;
};

// Writes F32 tensors atomically: the header from the names and shapes (in this order), then each
// tensor's data through add(), in the same order; commit() when all are written.
class SafetensorsWriter {
 public:
  SafetensorsWriter(const fs::path& file, const std::vector<std::pair<std::string, Shape>>& tensors,
                    const nlohmann::ordered_json& metadata);
  void add(std::span<const float> data);
  void commit();
  std::uint64_t size() const { return out_.size(); }
  std::uint32_t crc32c() const { return out_.crc32c(); }

 private:
  fs::path file_;
  AtomicOut out_;
  std::vector<std::uint64_t> sizes_;  // floats per tensor, in order
  std::size_t next_ = 0;
};

}  // namespace paxocl::models::files
