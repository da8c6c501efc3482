// OpenCL builtins for scripts/check_ptx.sh: NVIDIA's driver supplies them when it builds a program,
// clang's NVPTX target does not, and ptxas rejects an unresolved function. Included before every
// program (clang -include), built with -fdeclare-opencl-builtins: the header's builtins are then
// declared only on use, so these can be `static inline` (an unused one costs nothing) and a
// builtin missing here shows up as an `.extern .func _Z...` in the PTX, which check_ptx.sh names.
// Math goes to NVIDIA's libdevice (__nv_*, linked by check_ptx.sh from the CUDA toolkit: what
// NVIDIA's OpenCL compiler inlines too); the rest is special registers, bar.sync and plain C.
// A kernel that calls a builtin this file lacks: add it here (one line with the macros below).
#define PAX_OVL static inline __attribute__((overloadable, always_inline))

// Work-item functions (global offset 0, as pax-ocl launches everything).
PAX_OVL size_t get_local_id(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_tid_x() : d == 1 ? __nvvm_read_ptx_sreg_tid_y() : d == 2 ? __nvvm_read_ptx_sreg_tid_z() : 0;
}
PAX_OVL size_t get_group_id(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_ctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_ctaid_y() : d == 2 ? __nvvm_read_ptx_sreg_ctaid_z() : 0;
}
PAX_OVL size_t get_local_size(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_ntid_x() : d == 1 ? __nvvm_read_ptx_sreg_ntid_y() : d == 2 ? __nvvm_read_ptx_sreg_ntid_z() : 1;
}
PAX_OVL size_t get_enqueued_local_size(uint d) { return get_local_size(d); }
PAX_OVL size_t get_num_groups(uint d) {
  return d == 0 ? __nvvm_read_ptx_sreg_nctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_nctaid_y() : d == 2 ? __nvvm_read_ptx_sreg_nctaid_z() : 1;
}
PAX_OVL size_t get_global_id(uint d) { return get_group_id(d) * get_local_size(d) + get_local_id(d); }
PAX_OVL size_t get_global_size(uint d) { return get_num_groups(d) * get_local_size(d); }
PAX_OVL size_t get_global_offset(uint d) { return 0; }
PAX_OVL uint get_work_dim(void) { return __nvvm_read_ptx_sreg_nctaid_z() * __nvvm_read_ptx_sreg_ntid_z() > 1 ? 3
                                       : __nvvm_read_ptx_sreg_nctaid_y() * __nvvm_read_ptx_sreg_ntid_y() > 1 ? 2 : 1; }

// Synchronisation: bar.sync orders shared and global memory among the CTA's threads.
PAX_OVL void barrier(cl_mem_fence_flags f) { __nvvm_barrier_sync(0); }
PAX_OVL void mem_fence(cl_mem_fence_flags f) { __nvvm_membar_cta(); }
PAX_OVL void read_mem_fence(cl_mem_fence_flags f) { __nvvm_membar_cta(); }
PAX_OVL void write_mem_fence(cl_mem_fence_flags f) { __nvvm_membar_cta(); }

// Float math: libdevice, element by element for the vector types (as NVIDIA scalarises them).
#define PAX_NV1(nv) float nv(float);
#define PAX_NV2(nv) float nv(float, float);
#define PAX_NV3(nv) float nv(float, float, float);
PAX_NV1(__nv_expf) PAX_NV1(__nv_exp2f) PAX_NV1(__nv_exp10f) PAX_NV1(__nv_expm1f) PAX_NV1(__nv_logf) PAX_NV1(__nv_log2f)
PAX_NV1(__nv_log10f) PAX_NV1(__nv_log1pf) PAX_NV1(__nv_sqrtf) PAX_NV1(__nv_rsqrtf) PAX_NV1(__nv_cbrtf) PAX_NV1(__nv_sinf)
PAX_NV1(__nv_cosf) PAX_NV1(__nv_tanf) PAX_NV1(__nv_tanhf) PAX_NV1(__nv_sinhf) PAX_NV1(__nv_coshf) PAX_NV1(__nv_asinf)
PAX_NV1(__nv_acosf) PAX_NV1(__nv_atanf) PAX_NV1(__nv_erff) PAX_NV1(__nv_erfcf) PAX_NV1(__nv_fabsf) PAX_NV1(__nv_floorf)
PAX_NV1(__nv_ceilf) PAX_NV1(__nv_truncf) PAX_NV1(__nv_roundf) PAX_NV1(__nv_rintf) PAX_NV1(__nv_fast_expf)
PAX_NV1(__nv_fast_logf) PAX_NV1(__nv_fast_log2f) PAX_NV1(__nv_fast_exp10f) PAX_NV1(__nv_fast_sinf) PAX_NV1(__nv_fast_cosf)
PAX_NV1(__nv_frcp_rn)
PAX_NV2(__nv_fmaxf) PAX_NV2(__nv_fminf) PAX_NV2(__nv_powf) PAX_NV2(__nv_fmodf) PAX_NV2(__nv_atan2f) PAX_NV2(__nv_hypotf)
PAX_NV2(__nv_copysignf) PAX_NV2(__nv_fdimf) PAX_NV2(__nv_fast_fdividef) PAX_NV2(__nv_fast_powf)
PAX_NV3(__nv_fmaf)

#define PAX_UNARY(name, nv)                                                                                  \
  PAX_OVL float name(float x) { return nv(x); }                                                             \
  PAX_OVL float2 name(float2 x) { return (float2)(nv(x.s0), nv(x.s1)); }                                    \
  PAX_OVL float3 name(float3 x) { return (float3)(nv(x.s0), nv(x.s1), nv(x.s2)); }                          \
  PAX_OVL float4 name(float4 x) { return (float4)(name(x.lo), name(x.hi)); }                                \
  PAX_OVL float8 name(float8 x) { return (float8)(name(x.lo), name(x.hi)); }                                \
  PAX_OVL float16 name(float16 x) { return (float16)(name(x.lo), name(x.hi)); }
#define PAX_BINARY(name, nv)                                                                                 \
  PAX_OVL float name(float x, float y) { return nv(x, y); }                                                 \
  PAX_OVL float2 name(float2 x, float2 y) { return (float2)(nv(x.s0, y.s0), nv(x.s1, y.s1)); }              \
  PAX_OVL float3 name(float3 x, float3 y) { return (float3)(nv(x.s0, y.s0), nv(x.s1, y.s1), nv(x.s2, y.s2)); } \
  PAX_OVL float4 name(float4 x, float4 y) { return (float4)(name(x.lo, y.lo), name(x.hi, y.hi)); }          \
  PAX_OVL float8 name(float8 x, float8 y) { return (float8)(name(x.lo, y.lo), name(x.hi, y.hi)); }          \
  PAX_OVL float16 name(float16 x, float16 y) { return (float16)(name(x.lo, y.lo), name(x.hi, y.hi)); }
// fmax(floatN, float) and the like: the scalar broadcast.
#define PAX_BINARY_SCALAR(name)                                                                              \
  PAX_OVL float2 name(float2 x, float y) { return name(x, (float2)(y)); }                                   \
  PAX_OVL float3 name(float3 x, float y) { return name(x, (float3)(y)); }                                   \
  PAX_OVL float4 name(float4 x, float y) { return name(x, (float4)(y)); }                                   \
  PAX_OVL float8 name(float8 x, float y) { return name(x, (float8)(y)); }                                   \
  PAX_OVL float16 name(float16 x, float y) { return name(x, (float16)(y)); }
#define PAX_TERNARY(name, nv)                                                                                \
  PAX_OVL float name(float x, float y, float z) { return nv(x, y, z); }                                     \
  PAX_OVL float2 name(float2 x, float2 y, float2 z) { return (float2)(nv(x.s0, y.s0, z.s0), nv(x.s1, y.s1, z.s1)); } \
  PAX_OVL float3 name(float3 x, float3 y, float3 z) {                                                       \
    return (float3)(nv(x.s0, y.s0, z.s0), nv(x.s1, y.s1, z.s1), nv(x.s2, y.s2, z.s2));                      \
  }                                                                                                         \
  PAX_OVL float4 name(float4 x, float4 y, float4 z) { return (float4)(name(x.lo, y.lo, z.lo), name(x.hi, y.hi, z.hi)); } \
  PAX_OVL float8 name(float8 x, float8 y, float8 z) { return (float8)(name(x.lo, y.lo, z.lo), name(x.hi, y.hi, z.hi)); } \
  PAX_OVL float16 name(float16 x, float16 y, float16 z) {                                                   \
    return (float16)(name(x.lo, y.lo, z.lo), name(x.hi, y.hi, z.hi));                                       \
  }

PAX_UNARY(exp, __nv_expf) PAX_UNARY(exp2, __nv_exp2f) PAX_UNARY(exp10, __nv_exp10f) PAX_UNARY(expm1, __nv_expm1f)
PAX_UNARY(log, __nv_logf) PAX_UNARY(log2, __nv_log2f) PAX_UNARY(log10, __nv_log10f) PAX_UNARY(log1p, __nv_log1pf)
PAX_UNARY(sqrt, __nv_sqrtf) PAX_UNARY(rsqrt, __nv_rsqrtf) PAX_UNARY(cbrt, __nv_cbrtf) PAX_UNARY(sin, __nv_sinf)
PAX_UNARY(cos, __nv_cosf) PAX_UNARY(tan, __nv_tanf) PAX_UNARY(tanh, __nv_tanhf) PAX_UNARY(sinh, __nv_sinhf)
PAX_UNARY(cosh, __nv_coshf) PAX_UNARY(asin, __nv_asinf) PAX_UNARY(acos, __nv_acosf) PAX_UNARY(atan, __nv_atanf)
PAX_UNARY(erf, __nv_erff) PAX_UNARY(erfc, __nv_erfcf) PAX_UNARY(fabs, __nv_fabsf) PAX_UNARY(floor, __nv_floorf)
PAX_UNARY(ceil, __nv_ceilf) PAX_UNARY(trunc, __nv_truncf) PAX_UNARY(round, __nv_roundf) PAX_UNARY(rint, __nv_rintf)
PAX_UNARY(native_exp, __nv_fast_expf) PAX_UNARY(native_log, __nv_fast_logf) PAX_UNARY(native_log2, __nv_fast_log2f)
PAX_UNARY(native_exp10, __nv_fast_exp10f) PAX_UNARY(native_sin, __nv_fast_sinf) PAX_UNARY(native_cos, __nv_fast_cosf)
PAX_UNARY(native_sqrt, __nv_sqrtf) PAX_UNARY(native_rsqrt, __nv_rsqrtf) PAX_UNARY(native_recip, __nv_frcp_rn)
PAX_UNARY(native_exp2, __nv_exp2f) PAX_UNARY(half_exp, __nv_fast_expf) PAX_UNARY(half_log, __nv_fast_logf)
PAX_BINARY(fmax, __nv_fmaxf) PAX_BINARY(fmin, __nv_fminf) PAX_BINARY(pow, __nv_powf) PAX_BINARY(powr, __nv_powf)
PAX_BINARY(fmod, __nv_fmodf) PAX_BINARY(atan2, __nv_atan2f) PAX_BINARY(hypot, __nv_hypotf) PAX_BINARY(copysign, __nv_copysignf)
PAX_BINARY(fdim, __nv_fdimf) PAX_BINARY(native_divide, __nv_fast_fdividef) PAX_BINARY(native_powr, __nv_fast_powf)
PAX_BINARY_SCALAR(fmax) PAX_BINARY_SCALAR(fmin)
PAX_TERNARY(fma, __nv_fmaf) PAX_TERNARY(mad, __nv_fmaf)
PAX_OVL float pown(float x, int n) { return __nv_powf(x, (float)n); }
PAX_OVL float rootn(float x, int n) { return __nv_powf(x, 1.0f / (float)n); }
PAX_OVL float clamp(float x, float lo, float hi) { return fmin(fmax(x, lo), hi); }
PAX_OVL float mix(float x, float y, float a) { return x + (y - x) * a; }
PAX_OVL float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }

// Integer min, max, clamp, abs (C expressions, element-wise for vectors).
#define PAX_INT_MINMAX_N(T)                                                                                  \
  PAX_OVL T min(T a, T b) { return a < b ? a : b; }                                                         \
  PAX_OVL T max(T a, T b) { return a > b ? a : b; }                                                         \
  PAX_OVL T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
#define PAX_INT_MINMAX(T)                                                                                    \
  PAX_INT_MINMAX_N(T) PAX_INT_MINMAX_N(T##2) PAX_INT_MINMAX_N(T##3) PAX_INT_MINMAX_N(T##4)                  \
  PAX_INT_MINMAX_N(T##8) PAX_INT_MINMAX_N(T##16)
PAX_INT_MINMAX(char) PAX_INT_MINMAX(uchar) PAX_INT_MINMAX(short) PAX_INT_MINMAX(ushort) PAX_INT_MINMAX(int)
PAX_INT_MINMAX(uint) PAX_INT_MINMAX(long) PAX_INT_MINMAX(ulong)
PAX_OVL uint abs(int x) { return x < 0 ? (uint)-x : (uint)x; }
PAX_OVL ulong abs(long x) { return x < 0 ? (ulong)-x : (ulong)x; }
PAX_OVL uint abs(uint x) { return x; }
PAX_OVL ulong abs(ulong x) { return x; }
PAX_OVL uint mul24(uint a, uint b) { return a * b; }
PAX_OVL int mul24(int a, int b) { return a * b; }
PAX_OVL uint mad24(uint a, uint b, uint c) { return a * b + c; }
PAX_OVL int mad24(int a, int b, int c) { return a * b + c; }
PAX_OVL uint mul_hi(uint a, uint b) { return (uint)(((ulong)a * b) >> 32); }

// select (the most significant bit of each lane of c for vectors; c != 0 for scalars), isnan, isinf.
#define PAX_SELECT_N(T, C, N)                                                                                \
  PAX_OVL T##N select(T##N a, T##N b, C##N c) { return as_int##N(c) < 0 ? b : a; }
#define PAX_SELECT(T, C)                                                                                     \
  PAX_OVL T select(T a, T b, C c) { return c != 0 ? b : a; }                                                \
  PAX_SELECT_N(T, C, 2) PAX_SELECT_N(T, C, 3) PAX_SELECT_N(T, C, 4) PAX_SELECT_N(T, C, 8) PAX_SELECT_N(T, C, 16)
PAX_SELECT(float, int) PAX_SELECT(float, uint) PAX_SELECT(int, int) PAX_SELECT(int, uint) PAX_SELECT(uint, int)
PAX_SELECT(uint, uint)
PAX_OVL int isnan(float x) { return x != x; }
PAX_OVL int isinf(float x) { return __nv_fabsf(x) == INFINITY; }
PAX_OVL int isfinite(float x) { return __nv_fabsf(x) < INFINITY; }
PAX_OVL int4 isnan(float4 x) { return x != x; }

// convert_<T>N(<S>N): C conversions (float -> integer truncates, integer -> float rounds to
// nearest, as OpenCL's default rounding); no _sat / _rtX variants.
#define PAX_CONVERT_N(T, S, N)                                                                               \
  PAX_OVL T##N convert_##T##N(S##N x) { return __builtin_convertvector(x, T##N); }
#define PAX_CONVERT(T, S)                                                                                    \
  PAX_OVL T convert_##T(S x) { return (T)x; }                                                               \
  PAX_CONVERT_N(T, S, 2) PAX_CONVERT_N(T, S, 3) PAX_CONVERT_N(T, S, 4) PAX_CONVERT_N(T, S, 8) PAX_CONVERT_N(T, S, 16)
#define PAX_CONVERT_FROM_ALL(T)                                                                              \
  PAX_CONVERT(T, uchar) PAX_CONVERT(T, char) PAX_CONVERT(T, ushort) PAX_CONVERT(T, short) PAX_CONVERT(T, uint) \
  PAX_CONVERT(T, int) PAX_CONVERT(T, ulong) PAX_CONVERT(T, long) PAX_CONVERT(T, float)
PAX_CONVERT_FROM_ALL(uchar) PAX_CONVERT_FROM_ALL(char) PAX_CONVERT_FROM_ALL(ushort) PAX_CONVERT_FROM_ALL(short)
PAX_CONVERT_FROM_ALL(uint) PAX_CONVERT_FROM_ALL(int) PAX_CONVERT_FROM_ALL(ulong) PAX_CONVERT_FROM_ALL(long)
PAX_CONVERT_FROM_ALL(float)

// vloadN / vstoreN: element-aligned, as OpenCL requires (an aligned float4 pointer dereference is
// what makes a 128-bit ld.global.v4). Every address space.
#define PAX_VLOAD_N(T, N, AS)                                                                                \
  typedef T pax_##T##N##_##AS __attribute__((ext_vector_type(N), aligned(sizeof(T))));                      \
  PAX_OVL T##N vload##N(size_t i, const AS T* p) { return *(const AS pax_##T##N##_##AS*)(p + i * N); }
#define PAX_VSTORE_N(T, N, AS)                                                                               \
  PAX_OVL void vstore##N(T##N v, size_t i, AS T* p) { *(AS pax_##T##N##_##AS*)(p + i * N) = v; }
#define PAX_VLOADSTORE_AS(T, AS)                                                                             \
  PAX_VLOAD_N(T, 2, AS) PAX_VLOAD_N(T, 3, AS) PAX_VLOAD_N(T, 4, AS) PAX_VLOAD_N(T, 8, AS) PAX_VLOAD_N(T, 16, AS) \
  PAX_VSTORE_N(T, 2, AS) PAX_VSTORE_N(T, 3, AS) PAX_VSTORE_N(T, 4, AS) PAX_VSTORE_N(T, 8, AS) PAX_VSTORE_N(T, 16, AS)
#define PAX_VLOADSTORE(T)                                                                                    \
  PAX_VLOADSTORE_AS(T, __global) PAX_VLOADSTORE_AS(T, __local) PAX_VLOADSTORE_AS(T, __private)               \
  PAX_VLOAD_N(T, 2, __constant) PAX_VLOAD_N(T, 3, __constant) PAX_VLOAD_N(T, 4, __constant)                  \
  PAX_VLOAD_N(T, 8, __constant) PAX_VLOAD_N(T, 16, __constant)
PAX_VLOADSTORE(float) PAX_VLOADSTORE(uint) PAX_VLOADSTORE(int) PAX_VLOADSTORE(ushort) PAX_VLOADSTORE(short)
PAX_VLOADSTORE(uchar) PAX_VLOADSTORE(char)

// half <-> float through cvt (half storage, float arithmetic, as cl_khr_fp16-less OpenCL 1.2).
#define PAX_HALF_AS(AS)                                                                                      \
  PAX_OVL float vload_half(size_t i, const AS half* p) {                                                    \
    float r;                                                                                                \
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(((const AS ushort*)p)[i]));                                   \
    return r;                                                                                               \
  }                                                                                                         \
  PAX_OVL void vstore_half_rte(float v, size_t i, AS half* p) {                                             \
    ushort h;                                                                                               \
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));                                                       \
    ((AS ushort*)p)[i] = h;                                                                                 \
  }                                                                                                         \
  PAX_OVL void vstore_half(float v, size_t i, AS half* p) { vstore_half_rte(v, i, p); }                    \
  PAX_OVL float2 vload_half2(size_t i, const AS half* p) { return (float2)(vload_half(2 * i, p), vload_half(2 * i + 1, p)); } \
  PAX_OVL float4 vload_half4(size_t i, const AS half* p) { return (float4)(vload_half2(2 * i, p), vload_half2(2 * i + 1, p)); } \
  PAX_OVL float4 vloada_half4(size_t i, const AS half* p) { return vload_half4(i, p); } /* alignment unused */ \
  PAX_OVL float8 vload_half8(size_t i, const AS half* p) { return (float8)(vload_half4(2 * i, p), vload_half4(2 * i + 1, p)); } \
  PAX_OVL float16 vload_half16(size_t i, const AS half* p) { return (float16)(vload_half8(2 * i, p), vload_half8(2 * i + 1, p)); } \
  PAX_OVL void vstore_half2_rte(float2 v, size_t i, AS half* p) { vstore_half_rte(v.s0, 2 * i, p); vstore_half_rte(v.s1, 2 * i + 1, p); } \
  PAX_OVL void vstore_half4_rte(float4 v, size_t i, AS half* p) { vstore_half2_rte(v.lo, 2 * i, p); vstore_half2_rte(v.hi, 2 * i + 1, p); } \
  PAX_OVL void vstore_half8_rte(float8 v, size_t i, AS half* p) { vstore_half4_rte(v.lo, 2 * i, p); vstore_half4_rte(v.hi, 2 * i + 1, p); } \
  PAX_OVL void vstore_half16_rte(float16 v, size_t i, AS half* p) { vstore_half8_rte(v.lo, 2 * i, p); vstore_half8_rte(v.hi, 2 * i + 1, p); }
PAX_HALF_AS(__global) PAX_HALF_AS(__local) PAX_HALF_AS(__private)
