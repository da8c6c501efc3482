// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then the data. Generic I/O: weight
// files (models/weights_io.h) and checkpoint parts (checkpoint/) both use it. Every error reading a
// file is a FileError naming it; a failed write is a DataError (common/atomic_file.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/in_file.h"

namespace paxocl {

using TensorShape = std::vector<std::int64_t>;

// The product of a shape's dimensions, saturating (common/saturating.h).
std::uint64_t element_count(const TensorShape& shape);

// A safetensors file whose header has been read and checked: at most kMaxHeaderBytes (the format's
// own cap) and 64 levels of JSON, dtypes known, shapes matching their byte ranges, which tile the
// data exactly (extras included). So every entry's bytes are really in the file.
class SafetensorsReader {
 public:
  struct Entry {
    std::string dtype;
    TensorShape shape;
    std::uint64_t begin = 0, end = 0;  // bytes, relative to the data
  };
  static constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{100} << 20;
  explicit SafetensorsReader(const std::filesystem::path& file);
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
  SafetensorsWriter(const std::filesystem::path& file, const std::vector<std::pair<std::string, TensorShape>>& tensors,
                    const nlohmann::ordered_json& metadata);
  void add(std::span<const float> data);
  void commit();
  std::uint64_t size() const { return out_.size(); }
  std::uint32_t crc32c() const { return out_.crc32c(); }

 private:
  std::filesystem::path file_;
  AtomicFile out_;
  std::vector<std::uint64_t> sizes_;  // floats per tensor, in order
  std::size_t next_ = 0;
};

}  // namespace paxocl
