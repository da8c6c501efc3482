// CRC-32C (Castagnoli), as TFRecord files use it, and TensorFlow's masking of it.
// Table-driven, byte at a time: plenty for summary records.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace paxocl {

inline std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected 0x1EDC6F41
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (unsigned char b : data) crc = table[(crc ^ b) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

// TFRecord's masked CRC: rotate right by 15 and add a constant.
inline std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

}  // namespace paxocl
