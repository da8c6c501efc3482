// CPU variant of rmsnorm.cl (PoCL): the same kernels and arguments, with float16 vectors along the
// row (one row per work-item) and 16-column blocks for the weight gradient. act_t and the float
// statistics as in rmsnorm.cl.

__kernel void rmsnorm_forward(__global act_t* out, __global float* rstd_out, __global act_t* sum_out,
                              __global const act_t* x, __global const act_t* delta, __global const act_t* w,
                              const uint N, const uint C, const float eps, const uint has_delta) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  __global const act_t* row = x + at;
  uint c = 0;
  if (has_delta) {
    for (; c + 16 <= C; c += 16) act_store16(sum_out + at + c, act_load16(row + c) + act_load16(delta + at + c));
    for (; c < C; ++c) act_store(sum_out, at + c, act_load(row, c) + act_load(delta, at + c));
    row = sum_out + at;  // normalise the sum as stored
  }
  float16 acc = (float16)(0.0f);
  float tail = 0.0f;
  for (c = 0; c + 16 <= C; c += 16) {
    const float16 v = act_load16(row + c);
    acc = fma(v, v, acc);
  }
  for (; c < C; ++c) tail += act_load(row, c) * act_load(row, c);
  const float rstd = rsqrt((pax_lanes_sum(acc) + tail) / C + eps);
  for (c = 0; c + 16 <= C; c += 16) act_store16(out + at + c, act_load16(row + c) * rstd * act_load16(w + c));
  for (; c < C; ++c) act_store(out, at + c, act_load(row, c) * rstd * act_load(w, c));
  rstd_out[n] = rstd;
}

__kernel void rmsnorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                  __global const act_t* w, __global const float* rstd, __global const act_t* dresid,
                                  const uint N, const uint C, const uint has_resid) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  const float rs = rstd[n];
  float16 acc = (float16)(0.0f);
  float tail = 0.0f;
  uint c = 0;
  for (; c + 16 <= C; c += 16) acc = fma(act_load16(dout + at + c) * act_load16(w + c), act_load16(x + at + c) * rs, acc);
  for (; c < C; ++c) tail += act_load(dout, at + c) * act_load(w, c) * act_load(x, at + c) * rs;
  const float g_xhat_mean = (pax_lanes_sum(acc) + tail) / C;
  for (c = 0; c + 16 <= C; c += 16) {
    const float16 xhat = act_load16(x + at + c) * rs;
    float16 d = (act_load16(dout + at + c) * act_load16(w + c) - xhat * g_xhat_mean) * rs;
    if (has_resid) d += act_load16(dresid + at + c);
    act_store16(dx + at + c, d);
  }
  for (; c < C; ++c) {
    const float xhat = act_load(x, at + c) * rs;
    const float d = (act_load(dout, at + c) * act_load(w, c) - xhat * g_xhat_mean) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + d : d);
  }
}

// One 16-column block per work-item, rows in order.
__kernel void rmsnorm_backward_scale(__global float* dw, __global const act_t* dout, __global const act_t* x,
                                     __global const float* rstd, const uint N, const uint C) {
  const uint c0 = get_global_id(0) * 16;
  if (c0 >= C) return;
  if (c0 + 16 <= C) {
    float16 acc = (float16)(0.0f);
    for (uint n = 0; n < N; ++n) {
      acc = fma(act_load16(dout + (size_t)n * C + c0), act_load16(x + (size_t)n * C + c0) * rstd[n], acc);
    }
    vstore16(vload16(0, dw + c0) + acc, 0, dw + c0);
  } else {
    for (uint c = c0; c < C; ++c) {
      float acc = 0.0f;
      for (uint n = 0; n < N; ++n) acc += act_load(dout, (size_t)n * C + c) * act_load(x, (size_t)n * C + c) * rstd[n];
      dw[c] += acc;
    }
  }
}
