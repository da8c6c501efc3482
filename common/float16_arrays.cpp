#include "common/float16_arrays.h"

#include <cstring>

#include "common/float16.h"
#include "common/host_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PAXOCL_HAVE_F16C_VARIANT 1
#endif

namespace paxocl {
namespace {

constexpr std::size_t kLanes = 8;  // one vcvtph2ps / vcvtps2ph on ymm registers

#ifdef PAXOCL_HAVE_F16C_VARIANT
// A tail shorter than 8 goes through one padded vector, so that every element of an array takes
// the instruction's bits (a NaN's quiet bit included), not a mix of the two conversions.
[[gnu::target("avx,f16c")]] void halves_to_floats_f16c(const std::uint16_t* src, std::size_t n, float* dst) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  if (i == n) return;
  std::uint16_t in[kLanes] = {};
  float out[kLanes];
  std::memcpy(in, src + i, (n - i) * sizeof(std::uint16_t));
  _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
  std::memcpy(dst + i, out, (n - i) * sizeof(float));
}

[[gnu::target("avx,f16c")]] void floats_to_halves_f16c(const float* src, std::size_t n, std::uint16_t* dst) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  if (i == n) return;
  float in[kLanes] = {};
  std::uint16_t out[kLanes];
  std::memcpy(in, src + i, (n - i) * sizeof(float));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  std::memcpy(dst + i, out, (n - i) * sizeof(std::uint16_t));
}
#endif

}  // namespace

bool float16_arrays_use_f16c() {
#ifdef PAXOCL_HAVE_F16C_VARIANT
  return host_isa().f16c;
#else
  return false;
#endif
}

void halves_to_floats(const std::uint16_t* src, std::size_t n, float* dst) {
#ifdef PAXOCL_HAVE_F16C_VARIANT
  if (float16_arrays_use_f16c()) return halves_to_floats_f16c(src, n, dst);
#endif
  for (std::size_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}

void floats_to_halves(const float* src, std::size_t n, std::uint16_t* dst) {
#ifdef PAXOCL_HAVE_F16C_VARIANT
  if (float16_arrays_use_f16c()) return floats_to_halves_f16c(src, n, dst);
#endif
  for (std::size_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
}

}  // namespace paxocl
