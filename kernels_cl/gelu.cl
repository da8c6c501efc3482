// GELU, tanh approximation: the formula and gelu_sigmoid are gelu_math.cl's (prepended to every
// program). Activations, their gradients and the bias (the step's copy) are act_t
// (kernels_cl/dtype.cl); everything is computed in float.

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
