// CPU variant of attention.cl (PoCL): the same kernels and arguments, one row per work-item with
// float16 vectors along the row (the causal row t has t + 1 live entries). Types and the block
// layout (BLOCK_ROW) as in attention.cl.

#define BLOCK_ROW(s, r)                                    \
  const uint L = q0 + (r) % Q + 1;                         \
  const size_t at = (size_t)((r) / Q) * S + q0 + (r) % Q;  \
  __global float* row = (s) + (size_t)(r) * K;

inline float max16(const float16 v) {
  const float8 a = fmax(v.lo, v.hi);
  const float4 b = fmax(a.lo, a.hi);
  return fmax(fmax(b.x, b.y), fmax(b.z, b.w));
}
inline float sum16(const float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  return (b.x + b.y) + (b.z + b.w);
}
// row[u] = 0 for u in [from, T)
inline void zero_tail(__global float* row, uint from, const uint T) {
  for (; from < T && (from & 15u); ++from) row[from] = 0.0f;
  for (; from + 16 <= T; from += 16) vstore16((float16)(0.0f), 0, row + from);
  for (; from < T; ++from) row[from] = 0.0f;
}

__kernel void causal_softmax_forward(__global float* s, __global float* lse, const uint Q, const uint K, const uint q0,
                                     const uint S, const float scale, const uint lse_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  BLOCK_ROW(s, r)
  float mx = -INFINITY;
  uint u = 0;
  for (; u + 16 <= L; u += 16) mx = fmax(mx, max16(vload16(0, row + u)));
  for (; u < L; ++u) mx = fmax(mx, row[u]);
  mx *= scale;  // scale > 0, so max(scale * s) = scale * max(s)
  float16 acc = (float16)(0.0f);
  float sum = 0.0f;
  for (u = 0; u + 16 <= L; u += 16) acc += exp(scale * vload16(0, row + u) - mx);
  for (; u < L; ++u) sum += exp(scale * row[u] - mx);
  const float l = mx + log(sum16(acc) + sum);
  for (u = 0; u + 16 <= L; u += 16) vstore16(exp(scale * vload16(0, row + u) - l), 0, row + u);
  for (; u < L; ++u) row[u] = exp(scale * row[u] - l);
  zero_tail(row, L, K);
  lse[lse_offset + at] = l;
}

__kernel void causal_probs_from_lse(__global float* s, __global const float* lse, const uint Q, const uint K,
                                    const uint q0, const uint S, const float scale, const uint lse_offset,
                                    const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  BLOCK_ROW(s, r)
  const float l = lse[lse_offset + at];
  uint u = 0;
  for (; u + 16 <= L; u += 16) vstore16(exp(scale * vload16(0, row + u) - l), 0, row + u);
  for (; u < L; ++u) row[u] = exp(scale * row[u] - l);
  zero_tail(row, L, K);
}

__kernel void attention_row_dot(__global float* delta, __global const act_t* out, __global const act_t* dout,
                                const uint T, const uint NH, const uint hs, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  const uint t = r % T, h = (r / T) % NH, b = r / (T * NH);
  const size_t base = ((size_t)b * T + t) * NH * hs + h * hs;
  float16 acc = (float16)(0.0f);
  float tail = 0.0f;
  uint d = 0;
  for (; d + 16 <= hs; d += 16) acc = fma(act_load16(out + base + d), act_load16(dout + base + d), acc);
  for (; d < hs; ++d) tail += act_load(out, base + d) * act_load(dout, base + d);
  delta[r] = sum16(acc) + tail;
}

__kernel void causal_softmax_backward(__global float* dp, __global const float* p, __global const float* delta,
                                      const uint Q, const uint K, const uint q0, const uint S, const float scale,
                                      const uint delta_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  BLOCK_ROW(dp, r)
  const float dl = delta[delta_offset + at];
  __global const float* prow = p + (size_t)r * K;
  uint u = 0;
  for (; u + 16 <= L; u += 16) vstore16(scale * vload16(0, prow + u) * (vload16(0, row + u) - dl), 0, row + u);
  for (; u < L; ++u) row[u] = scale * prow[u] * (row[u] - dl);
  zero_tail(row, L, K);
}
