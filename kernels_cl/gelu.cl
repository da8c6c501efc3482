// GELU, tanh approximation (Pax: approximate=True):
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = k (x + 0.044715 x^3),  k = sqrt(2/pi)
// Evaluated through s = 0.5 (1 + tanh(u)) = sigmoid(2u), which keeps full relative precision in
// the far negative tail where 1 + tanh(u) would cancel to zero in float:
//   gelu(x) = x s,   gelu'(x) = s + 2 x s (1 - s) u'   (since sech^2(u) = 4 s (1 - s))
// Activations, their gradients and the bias (the step's copy) are act_t (kernels_cl/dtype.cl);
// everything is computed in float.
#define GELU_K 0.7978845608028654f

inline float gelu_sigmoid(const float x) {
  const float u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}

__kernel void gelu_forward(__global act_t* out, __global const act_t* x, const uint n) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = act_load(x, i);
  act_store(out, i, v * gelu_sigmoid(v));
}

// dx = dout * gelu'(x)
__kernel void gelu_backward(__global act_t* dx, __global const act_t* x, __global const act_t* dout, const uint n) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = act_load(x, i);
  const float s = gelu_sigmoid(v);
  const float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
  act_store(dx, i, act_load(dout, i) * (s + 2.0f * v * s * (1.0f - s) * du));
}

// Fused bias + GELU: pre[i] += bias[i % C] (kept for backward), out[i] = gelu(pre[i]) of the
// float sum (one rounding per output).   (N, C)
__kernel void bias_gelu_forward(__global act_t* pre, __global act_t* out, __global const act_t* bias, const uint N,
                                const uint C) {
  const uint i = get_global_id(0);
  if (i >= N * C) return;
  const float v = act_load(pre, i) + act_load(bias, i % C);
  act_store(pre, i, v);
  act_store(out, i, v * gelu_sigmoid(v));
}
