// GELU, tanh approximation: the formulas, gelu_sigmoid and gelu_grad are gelu_math.cl's (prepended to every
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
  act_store(dx, i, act_load(dout, i) * gelu_grad(act_load(x, i)));
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
