// CPU variant of gelu.cl (PoCL): float16 vectors, 16 elements (or one row) per work-item.
// gelu(x) = x s,  gelu'(x) = s + 2 x s (1 - s) u',  s = sigmoid(2u),  u = k (x + 0.044715 x^3).
#define GELU_K 0.7978845608028654f

inline float16 gelu_sigmoid16(const float16 x) {
  const float16 u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}
inline float gelu_sigmoid(const float x) {
  const float u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}
inline float16 gelu_grad16(const float16 x) {
  const float16 s = gelu_sigmoid16(x);
  return s + 2.0f * x * s * (1.0f - s) * (GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}
inline float gelu_grad(const float x) {
  const float s = gelu_sigmoid(x);
  return s + 2.0f * x * s * (1.0f - s) * (GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}

__kernel void gelu_forward(__global float* out, __global const float* x, const uint n) {
  const uint base = get_global_id(0) * 16;
  if (base >= n) return;
  if (base + 16 <= n) {
    const float16 v = vload16(0, x + base);
    vstore16(v * gelu_sigmoid16(v), 0, out + base);
  } else {
    for (uint i = base; i < n; ++i) out[i] = x[i] * gelu_sigmoid(x[i]);
  }
}

__kernel void gelu_backward(__global float* dx, __global const float* x, __global const float* dout, const uint n) {
  const uint base = get_global_id(0) * 16;
  if (base >= n) return;
  if (base + 16 <= n) {
    vstore16(vload16(0, dout + base) * gelu_grad16(vload16(0, x + base)), 0, dx + base);
  } else {
    for (uint i = base; i < n; ++i) dx[i] = dout[i] * gelu_grad(x[i]);
  }
}

// Fused bias + GELU, one row per work-item: pre[n, :] += bias (kept for backward), out = gelu(pre).
__kernel void bias_gelu_forward(__global float* pre, __global float* out, __global const float* bias, const uint N,
                                const uint C) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global float* p = pre + (size_t)n * C;
  __global float* o = out + (size_t)n * C;
  uint c = 0;
  for (; c + 16 <= C; c += 16) {
    const float16 v = vload16(0, p + c) + vload16(0, bias + c);
    vstore16(v, 0, p + c);
    vstore16(v * gelu_sigmoid16(v), 0, o + c);
  }
  for (; c < C; ++c) {
    const float v = p[c] + bias[c];
    p[c] = v;
    o[c] = v * gelu_sigmoid(v);
  }
}
