// Storage types for mixed precision (device/dtype.h), prepended to every program (program_loader.cpp).
// A program built with -DPAX_ACT_BF16 or -DPAX_ACT_F16 stores act_t in 16 bits; without, act_t is
// float. Kernels read and write act_t only through these helpers and compute in float:
//   act_load(p, i) / act_store(p, i, v)       one element
//   act_load16(p) / act_store16(p, v)         16 consecutive elements at p (as vload16 / vstore16)
//   act_load4(p, i) / act_store4(p, i, v)     4 consecutive elements from element i (the GPU set;
//                                             vload4 needs only the element's alignment)
//   act_load4a(p, i)                          the same 4, i a multiple of 4 from an aligned base: one
//                                             16-byte (float32) or 8-byte (16-bit) load
//   act_load2(p, i) / act_store2(p, i, v)     elements i and i + 1, i even from an aligned base: one
//                                             4-byte (16-bit) or 8-byte (float32) access
//   act_round(v)                              v rounded to act_t and back (what act_store then
//                                             act_load would read), without the memory round trip
// and pax_lanes_sum(v), the sum of a float16's lanes in one fixed order (the CPU twins' row sums).
// Stores round to nearest even, bit-exact with device/dtype.cpp.

// float -> bfloat16, round to nearest even; NaN stays a (quiet) NaN.
inline ushort pax_float_to_bf16(float f) {
  const uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float pax_bf16_to_float(ushort h) { return as_float((uint)h << 16); }
inline ushort16 pax_float16_to_bf16(float16 f) {
  const uint16 u = as_uint16(f);
  const uint16 rounded = (u + (uint16)(0x7fffu) + ((u >> 16) & (uint16)(1u))) >> 16;
  const uint16 nan = (u >> 16) | (uint16)(0x40u);
  return convert_ushort16(select(rounded, nan, (u & (uint16)(0x7fffffffu)) > (uint16)(0x7f800000u)));
}
inline float16 pax_bf16_16_to_float(ushort16 h) { return as_float16(convert_uint16(h) << 16); }

inline float pax_lanes_sum(const float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 c = b.lo + b.hi;
  return c.x + c.y;
}

#if defined(PAX_ACT_BF16)
typedef ushort act_t;
inline float act_load(__global const act_t* p, size_t i) { return pax_bf16_to_float(p[i]); }
inline void act_store(__global act_t* p, size_t i, float v) { p[i] = pax_float_to_bf16(v); }
// 16 elements as one 32-byte vector access that needs only an element's alignment: PoCL 3.1's
// vstore16 of a ushort16 often ended as 16 scalar stores (gelu_forward: 14.8 -> 10.5 ms on 8M
// elements, one core of a Xeon).
typedef ushort16 __attribute__((aligned(2))) pax_unaligned_ushort16;
inline float16 act_load16(__global const act_t* p) { return pax_bf16_16_to_float(*(__global const pax_unaligned_ushort16*)p); }
inline void act_store16(__global act_t* p, float16 v) { *(__global pax_unaligned_ushort16*)p = pax_float16_to_bf16(v); }
inline float4 act_load4(__global const act_t* p, size_t i) { return as_float4(convert_uint4(vload4(0, p + i)) << 16); }
inline float4 act_load4a(__global const act_t* p, size_t i) {
  return as_float4(convert_uint4(*(__global const ushort4*)(p + i)) << 16);
}
inline void act_store4(__global act_t* p, size_t i, float4 v) {
  p[i] = pax_float_to_bf16(v.x);
  p[i + 1] = pax_float_to_bf16(v.y);
  p[i + 2] = pax_float_to_bf16(v.z);
  p[i + 3] = pax_float_to_bf16(v.w);
}
inline float2 act_load2(__global const act_t* p, size_t i) {
  const uint w = *(__global const uint*)(p + i);
  return (float2)(as_float(w << 16), as_float(w & 0xffff0000u));
}
inline void act_store2(__global act_t* p, size_t i, float2 v) {
  *(__global uint*)(p + i) = (uint)pax_float_to_bf16(v.x) | (uint)pax_float_to_bf16(v.y) << 16;
}
inline float act_round(float v) { return pax_bf16_to_float(pax_float_to_bf16(v)); }
#elif defined(PAX_ACT_F16)
typedef half act_t;
inline float act_load(__global const act_t* p, size_t i) { return vload_half(i, p); }
inline void act_store(__global act_t* p, size_t i, float v) { vstore_half_rte(v, i, p); }
inline float16 act_load16(__global const act_t* p) { return vload_half16(0, p); }
inline void act_store16(__global act_t* p, float16 v) { vstore_half16_rte(v, 0, p); }
inline float4 act_load4(__global const act_t* p, size_t i) { return vload_half4(0, p + i); }
inline float4 act_load4a(__global const act_t* p, size_t i) { return vloada_half4(0, p + i); }
inline void act_store4(__global act_t* p, size_t i, float4 v) { vstore_half4_rte(v, 0, p + i); }
inline float2 act_load2(__global const act_t* p, size_t i) { return vload_half2(0, p + i); }
inline void act_store2(__global act_t* p, size_t i, float2 v) { vstore_half2_rte(v, 0, p + i); }
inline float act_round(float v) {
  ushort bits;  // half storage, as act_store writes it (round to nearest even)
  vstore_half_rte(v, 0, (__private half*)&bits);
  return vload_half(0, (__private const half*)&bits);
}
#else
typedef float act_t;
inline float act_load(__global const act_t* p, size_t i) { return p[i]; }
inline void act_store(__global act_t* p, size_t i, float v) { p[i] = v; }
inline float16 act_load16(__global const act_t* p) { return vload16(0, p); }
inline void act_store16(__global act_t* p, float16 v) { vstore16(v, 0, p); }
inline float4 act_load4(__global const act_t* p, size_t i) { return vload4(0, p + i); }
inline float4 act_load4a(__global const act_t* p, size_t i) { return *(__global const float4*)(p + i); }
inline void act_store4(__global act_t* p, size_t i, float4 v) { vstore4(v, 0, p + i); }
inline float2 act_load2(__global const act_t* p, size_t i) { return *(__global const float2*)(p + i); }
inline void act_store2(__global act_t* p, size_t i, float2 v) { *(__global float2*)(p + i) = v; }
inline float act_round(float v) { return v; }
#endif
