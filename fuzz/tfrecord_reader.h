// A TFRecord reader written independently of the project's writer (scheduler/summary_writer.cpp,
// common/crc32c.h), as TensorFlow documents the framing: per record a little-endian uint64 length,
// the masked CRC32C of those 8 bytes, the data, and the masked CRC32C of the data. The CRC here is
// the bitwise definition, not the writer's table, so a bug in either shows as a mismatch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paxocl::fuzz {

inline std::uint32_t bitwise_crc32c(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

inline std::uint64_t little_endian(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) v = v << 8 | static_cast<unsigned char>(bytes[i]);
  return v;
}

// The records of `file_bytes`; sets `error` (and returns what was read so far) when the framing,
// a length or a CRC is wrong or the file ends inside a record.
inline std::vector<std::string> read_tfrecords(std::string_view file_bytes, std::string& error) {
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < file_bytes.size()) {
    if (file_bytes.size() - at < 12) {
      error = "the file ends inside a record's length";
      return records;
    }
    const std::string_view length_bytes = file_bytes.substr(at, 8);
    const std::uint64_t length = little_endian(length_bytes);
    if (masked(bitwise_crc32c(length_bytes)) != little_endian(file_bytes.substr(at + 8, 4))) {
      error = "a record's length CRC does not match";
      return records;
    }
    at += 12;
    if (length > file_bytes.size() - at || file_bytes.size() - at - length < 4) {
      error = "a record's length reaches past the end of the file";
      return records;
    }
    const std::string_view payload = file_bytes.substr(at, length);
    if (masked(bitwise_crc32c(payload)) != little_endian(file_bytes.substr(at + length, 4))) {
      error = "a record's data CRC does not match";
      return records;
    }
    records.emplace_back(payload);
    at += length + 4;
  }
  return records;
}

}  // namespace paxocl::fuzz
