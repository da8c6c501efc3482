// Bias of a linear layer. out and dout are act_t activations, bias the step's act_t copy of the
// weight (kernels_cl/dtype.cl); the gradient of the float32 parameter is float, summed in float.

// out[n, c] += bias[c]                              out: (N, C)
__kernel void bias_add(__global act_t* out, __global const act_t* bias, const uint N, const uint C) {
  const uint i = get_global_id(0);
  if (i < N * C) act_store(out, i, act_load(out, i) + act_load(bias, i % C));
}

// dbias[c] += sum_n dout[n, c], rows in order (deterministic).     dout: (N, C)
__kernel void bias_grad(__global float* dbias, __global const act_t* dout, const uint N, const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  float acc = 0.0f;
  for (uint n = 0; n < N; ++n) acc += act_load(dout, (size_t)n * C + c);
  dbias[c] += acc;
}
