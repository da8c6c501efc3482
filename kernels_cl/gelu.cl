// GELU, tanh approximation (Pax: approximate=True):
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = k (x + 0.044715 x^3),  k = sqrt(2/pi)
// Evaluated through s = 0.5 (1 + tanh(u)) = sigmoid(2u), which keeps full relative precision in
// the far negative tail where 1 + tanh(u) would cancel to zero in float:
//   gelu(x) = x s,   gelu'(x) = s + 2 x s (1 - s) u'   (since sech^2(u) = 4 s (1 - s))
#define GELU_K 0.7978845608028654f

inline float gelu_sigmoid(const float x) {
  const float u = GELU_K * (x + 0.044715f * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}

__kernel void gelu_forward(__global float* out, __global const float* x, const uint n) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[i];
  out[i] = v * gelu_sigmoid(v);
}

// dx = dout * gelu'(x)
__kernel void gelu_backward(__global float* dx, __global const float* x, __global const float* dout, const uint n) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[i];
  const float s = gelu_sigmoid(v);
  const float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
  dx[i] = dout[i] * (s + 2.0f * v * s * (1.0f - s) * du);
}

// Fused bias + GELU: pre[i] += bias[i % C] (kept for backward), out[i] = gelu(pre[i]).   (N, C)
__kernel void bias_gelu_forward(__global float* pre, __global float* out, __global const float* bias, const uint N,
                                const uint C) {
  const uint i = get_global_id(0);
  if (i >= N * C) return;
  const float v = pre[i] + bias[i % C];
  pre[i] = v;
  out[i] = v * gelu_sigmoid(v);
}
