#include "device/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/float16_arrays.h"

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
  std::vector<std::uint16_t> bits(values.size());
  if (t == DType::kF16) {
    floats_to_halves(values.data(), values.size(), bits.data());
  } else {
    for (std::size_t i = 0; i < values.size(); ++i) bits[i] = float_to_bf16(values[i]);
  }
  if (!bits.empty()) std::memcpy(out.data(), bits.data(), out.size());
  return out;
}

std::vector<float> decode(DType t, std::span<const std::byte> bytes) {
  std::vector<float> out(bytes.size() / dtype_size(t));
  if (t == DType::kF32) {
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }
  std::vector<std::uint16_t> bits(out.size());
  if (!bits.empty()) std::memcpy(bits.data(), bytes.data(), bits.size() * 2);
  if (t == DType::kF16) {
    halves_to_floats(bits.data(), bits.size(), out.data());
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_float(bits[i]);
  }
  return out;
}

}  // namespace paxocl::device
