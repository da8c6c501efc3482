// Bias of a linear layer.

// out[n, c] += bias[c]                              out: (N, C)
__kernel void bias_add(__global float* out, __global const float* bias, const uint N, const uint C) {
  const uint i = get_global_id(0);
  if (i < N * C) out[i] += bias[i % C];
}

// dbias[c] += sum_n dout[n, c], rows in order (deterministic).     dout: (N, C)
__kernel void bias_grad(__global float* dbias, __global const float* dout, const uint N, const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  float acc = 0.0f;
  for (uint n = 0; n < N; ++n) acc += dout[(size_t)n * C + c];
  dbias[c] += acc;
}
