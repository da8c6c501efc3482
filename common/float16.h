// The two 16-bit float formats as bits on the host, bit-exact with the OpenCL kernels' conversions
// (kernels_cl/dtype.cl): bfloat16 (the top half of a float32) and IEEE binary16. Rounding to nearest,
// ties to even; NaN stays NaN; overflow gives infinity. Activation buffers (device/dtype.h) and
// 16-bit weight files (models/hf_llama_io.h) both use them.
#pragma once

#include <cstdint>

namespace paxocl {

std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t h);
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);

}  // namespace paxocl
