// The two 16-bit float formats as bits on the host, bit-exact with the OpenCL kernels' conversions
// (kernels_cl/dtype.cl): bfloat16 (the top half of a float32) and IEEE binary16. Rounding to nearest,
// ties to even; NaN stays NaN; overflow gives infinity. Activation buffers (device/dtype.h) and
// 16-bit weight files (models/hf_llama_io.h) both use them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace paxocl {

// Inline and branch-free where they can be, so loops over rows of them vectorize (the host's flash
// attention widens and rounds whole blocks with them).
inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // to nearest, ties to even; overflow
                                                                        // carries into infinity
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);  // quiet NaN
}

inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 (ties away from odd 65504)
  if (ax < 0x38800000u) {
    // Below 2^-14: a subnormal half, in units of 2^-24; the scaling is exact, nearbyint rounds to even.
    const auto units = static_cast<std::uint32_t>(std::nearbyint(std::bit_cast<float>(ax) * 16777216.0f));
    return static_cast<std::uint16_t>(sign | units);  // 0x400 is the smallest normal, as it should be
  }
  std::uint32_t r = ax - 0x38000000u;  // exponent bias 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1p-24f;  // a subnormal half (or zero): exact
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

}  // namespace paxocl
