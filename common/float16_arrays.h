// Arrays of IEEE binary16 to and from float32, with the CPU's F16C instructions (vcvtph2ps,
// vcvtps2ph: 8 values an instruction) where CPUID reports them, float16.h's scalar conversions
// elsewhere. The same bits either way: round to nearest, ties to even, subnormals exact, overflow
// to infinity; a NaN stays a NaN of the same sign (F16C also sets a signalling NaN's quiet bit).
// The scalar conversions branch on subnormals and NaNs, so a compiler does not vectorize them:
// the host's flash attention and the act buffers' host copies convert whole rows through these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace paxocl {

// dst[i] = the float16 src[i] as a float32, i < n.
void halves_to_floats(const std::uint16_t* src, std::size_t n, float* dst);

// dst[i] = src[i] rounded to float16, i < n.
void floats_to_halves(const float* src, std::size_t n, std::uint16_t* dst);

// Whether the two above run on F16C instructions on this CPU (decided once, from CPUID).
bool float16_arrays_use_f16c();

}  // namespace paxocl
