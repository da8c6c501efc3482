// CPU variant of bias.cl (PoCL): rows and 16-column blocks with float16 vectors; types as in bias.cl.

// out[n, :] += bias, one row per work-item.                           out: (N, C)
__kernel void bias_add(__global act_t* out, __global const act_t* bias, const uint N, const uint C) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global act_t* row = out + (size_t)n * C;
  uint c = 0;
  for (; c + 16 <= C; c += 16) act_store16(row + c, act_load16(row + c) + act_load16(bias + c));
  for (; c < C; ++c) act_store(row, c, act_load(row, c) + act_load(bias, c));
}

// dbias[c0 .. c0+15] += column sums of dout, one 16-column block per work-item, rows in order.
__kernel void bias_grad(__global float* dbias, __global const act_t* dout, const uint N, const uint C) {
  const uint c0 = get_global_id(0) * 16;
  if (c0 >= C) return;
  if (c0 + 16 <= C) {
    float16 acc = (float16)(0.0f);
    for (uint n = 0; n < N; ++n) acc += act_load16(dout + (size_t)n * C + c0);
    vstore16(vload16(0, dbias + c0) + acc, 0, dbias + c0);
  } else {
    for (uint c = c0; c < C; ++c) {
      float acc = 0.0f;
      for (uint n = 0; n < N; ++n) acc += act_load(dout, (size_t)n * C + c);
      dbias[c] += acc;
    }
  }
}
