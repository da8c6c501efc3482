#include "device/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::device {

namespace {
// Everything per dtype in one row, indexed by the enum's value.
struct DTypeTraits {
  std::string_view name;
  std::size_t size;
  int mantissa_bits;  // stored, without the implicit leading one
  std::string_view build_option;
};
constexpr DTypeTraits kTraits[] = {
    {"float32", 4, 23, "-DPAX_ACT_F32"},
    {"bfloat16", 2, 7, "-DPAX_ACT_BF16"},
    {"float16", 2, 10, "-DPAX_ACT_F16"},
};
const DTypeTraits& traits(DType t) { return kTraits[static_cast<std::size_t>(t)]; }
}  // namespace

std::size_t dtype_size(DType t) { return traits(t).size; }
std::string_view dtype_name(DType t) { return traits(t).name; }
double dtype_unit_roundoff(DType t) { return std::ldexp(1.0, -(traits(t).mantissa_bits + 1)); }
std::string_view dtype_build_option(DType t) { return traits(t).build_option; }

DType dtype_from_name(std::string_view name) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    if (dtype_name(t) == name) return t;
  }
  throw ConfigError(fmt::format("dtype '{}' is unknown; use float32, bfloat16 or float16", name));
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even (overflow carries into infinity)
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t float_to_half(float f) {
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

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

float round_to(DType t, float value) {
  switch (t) {
    case DType::kBF16: return bf16_to_float(float_to_bf16(value));
    case DType::kF16: return half_to_float(float_to_half(value));
    case DType::kF32: break;
  }
  return value;
}

std::vector<std::byte> encode(DType t, std::span<const float> values) {
  std::vector<std::byte> out(values.size() * dtype_size(t));
  if (t == DType::kF32) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = t == DType::kBF16 ? float_to_bf16(values[i]) : float_to_half(values[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<float> decode(DType t, std::span<const std::byte> bytes) {
  std::vector<float> out(bytes.size() / dtype_size(t));
  if (t == DType::kF32) {
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t h = 0;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    out[i] = t == DType::kBF16 ? bf16_to_float(h) : half_to_float(h);
  }
  return out;
}

}  // namespace paxocl::device
