// CPU variant of gelu.cl (PoCL): float16 vectors, 16 elements (or one row) per work-item; types as in gelu.cl.
// gelu(x) = x s,  gelu'(x) = s + 2 x s (1 - s) u',  s = sigmoid(2u),  u = k (x + 0.044715 x^3).
inline float16 gelu_sigmoid16(const float16 x) {
  const float16 u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}
inline float16 gelu_grad16(const float16 x) {
  const float16 s = gelu_sigmoid16(x);
  return s + 2.0f * x * s * (1.0f - s) * (GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}

__kernel void gelu_forward(__global act_t* out, __global const act_t* x, const uint n) {
  const uint base = get_global_id(0) * 16;
  if (base >= n) return;
  if (base + 16 <= n) {
    const float16 v = act_load16(x + base);
    act_store16(out + base, v * gelu_sigmoid16(v));
  } else {
    for (uint i = base; i < n; ++i) act_store(out, i, act_load(x, i) * gelu_sigmoid(act_load(x, i)));
  }
}

__kernel void gelu_backward(__global act_t* dx, __global const act_t* x, __global const act_t* dout, const uint n) {
  const uint base = get_global_id(0) * 16;
  if (base >= n) return;
  if (base + 16 <= n) {
    act_store16(dx + base, act_load16(dout + base) * gelu_grad16(act_load16(x + base)));
  } else {
    for (uint i = base; i < n; ++i) act_store(dx, i, act_load(dout, i) * gelu_grad(act_load(x, i)));
  }
}

// Fused bias + GELU, one row per work-item: pre[n, :] += bias (kept for backward), out = gelu(pre).
__kernel void bias_gelu_forward(__global act_t* pre, __global act_t* out, __global const act_t* bias, const uint N,
                                const uint C) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global act_t* p = pre + (size_t)n * C;
  __global act_t* o = out + (size_t)n * C;
  uint c = 0;
  for (; c + 16 <= C; c += 16) {
    const float16 v = act_load16(p + c) + act_load16(bias + c);
    act_store16(p + c, v);
    act_store16(o + c, v * gelu_sigmoid16(v));
  }
  for (; c < C; ++c) {
    const float v = act_load(p, c) + act_load(bias, c);
    act_store(p, c, v);
    act_store(o, c, v * gelu_sigmoid(v));
  }
}
