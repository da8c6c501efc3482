// DType: the element types pax-ocl stores on devices. float32 everywhere by default; with
// FPROP_DTYPE=bfloat16 or float16 (Pax's mixed precision), activations and the per-step copy of
// the weights are stored in 16 bits while parameters, gradients and optimizer state stay float32
// and every kernel computes in float32.
//   bfloat16: the top half of a float32 (8 exponent bits, 7 mantissa bits), stored as ushort.
//   float16:  IEEE binary16 (5 exponent bits, 10 mantissa bits), through vload_half/vstore_half.
// Conversions to 16 bits round to nearest even; NaN stays NaN, overflow gives infinity.
#pragma once

#include "common/float16.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace paxocl::device {

enum class DType { kF32, kBF16, kF16 };

std::size_t dtype_size(DType t);         // bytes per element: 4 or 2
// Whether t is stored in 16 bits (bfloat16, float16): the dtypes tensor cores multiply.
inline bool is_16_bit(DType t) { return t != DType::kF32; }
std::string_view dtype_name(DType t);    // Pax's names: "float32", "bfloat16", "float16"
// The DType Pax's name `name` stands for; throws ConfigError naming the valid ones.
DType dtype_from_name(std::string_view name);
// Unit roundoff u = 2^-(mantissa bits + 1): the largest relative error of one rounding to t.
double dtype_unit_roundoff(DType t);
// The OpenCL build option selecting the storage type of `act_t` in kernels_cl/dtype.cl.
std::string_view dtype_build_option(DType t);

// Host conversions, bit-exact with the kernels' (kernels_cl/dtype.cl).
using paxocl::bf16_to_float;  // common/float16.h
using paxocl::float_to_bf16;
using paxocl::float_to_half;
using paxocl::half_to_float;
// `value` rounded to t and back (the identity for kF32).
float round_to(DType t, float value);

// Host images of device storage: float32 values to the bytes of a `t` buffer and back.
std::vector<std::byte> encode(DType t, std::span<const float> values);
std::vector<float> decode(DType t, std::span<const std::byte> bytes);

}  // namespace paxocl::device
