// GELU (tanh approximation), GPU twin of gelu.cl (same formulas and argument lists): each
// work-item owns 4 consecutive elements (act_load4 / act_store4), a scalar tail past the last
// whole four.   (n) or (N, C)

// s = 0.5 (1 + tanh(u)) = sigmoid(2u), u = k (x + 0.044715 x^3): gelu(x) = x s (see gelu_math.cl).
inline float4 gelu_sigmoid4(const float4 x) {
  const float4 u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}
// gelu'(x) = s + 2 x s (1 - s) u'
inline float4 gelu_grad4(const float4 x) {
  const float4 s = gelu_sigmoid4(x);
  return s + 2.0f * x * s * (1.0f - s) * (GELU_K * (1.0f + 3.0f * 0.044715f * x * x));
}

PAX_GPU_KERNEL void gelu_forward(__global act_t* out, __global const act_t* x, const uint n) {
  const uint i = get_global_id(0) * 4;
  if (i + 4 <= n) {
    const float4 v = act_load4(x, i);
    act_store4(out, i, v * gelu_sigmoid4(v));
    return;
  }
  for (uint j = i; j < n; ++j) {
    const float v = act_load(x, j);
    act_store(out, j, v * gelu_sigmoid4((float4)(v)).x);
  }
}

// dx = dout * gelu'(x)
PAX_GPU_KERNEL void gelu_backward(__global act_t* dx, __global const act_t* x, __global const act_t* dout,
                                  const uint n) {
  const uint i = get_global_id(0) * 4;
  if (i + 4 <= n) {
    act_store4(dx, i, act_load4(dout, i) * gelu_grad4(act_load4(x, i)));
    return;
  }
  for (uint j = i; j < n; ++j) act_store(dx, j, act_load(dout, j) * gelu_grad4((float4)(act_load(x, j))).x);
}

// Fused bias + GELU: pre += bias (kept for backward), out = gelu(pre) of the float sum.   (N, C)
// The bias is read per element (a row of C need not start on a multiple of 4).
PAX_GPU_KERNEL void bias_gelu_forward(__global act_t* pre, __global act_t* out, __global const act_t* bias,
                                      const uint N, const uint C) {
  const uint i = get_global_id(0) * 4, n = N * C;
  if (i >= n) return;
  uint c = i % C;
  if (i + 4 <= n) {
    float b[4];
    for (uint k = 0; k < 4; ++k) {
      b[k] = act_load(bias, c);
      c = c + 1 == C ? 0 : c + 1;
    }
    const float4 v = act_load4(pre, i) + (float4)(b[0], b[1], b[2], b[3]);
    act_store4(pre, i, v);
    act_store4(out, i, v * gelu_sigmoid4(v));
    return;
  }
  for (uint j = i; j < n; ++j) {
    const float s = act_load(pre, j) + act_load(bias, c);
    act_store(pre, j, s);
    act_store(out, j, s * gelu_sigmoid4((float4)(s)).x);
    c = c + 1 == C ? 0 : c + 1;
  }
}
