// CPU variant of layernorm.cl (PoCL): the same kernels and arguments, with float16 vectors along
// the row (one row per work-item) and 16-column blocks for the parameter gradients. act_t and
// the float statistics as in layernorm.cl.

__kernel void layernorm_forward(__global act_t* out, __global float* mean_out, __global float* rstd_out,
                                __global act_t* sum_out, __global const act_t* x, __global const act_t* delta,
                                __global const act_t* w, __global const act_t* b, const uint N, const uint C,
                                const float eps, const uint has_delta) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  __global const act_t* row = x + at;
  if (has_delta) {
    uint c = 0;
    for (; c + 16 <= C; c += 16) act_store16(sum_out + at + c, act_load16(row + c) + act_load16(delta + at + c));
    for (; c < C; ++c) act_store(sum_out, at + c, act_load(row, c) + act_load(delta, at + c));
    row = sum_out + at;  // normalise the sum as stored
  }
  float16 acc = (float16)(0.0f);
  float tail = 0.0f;
  uint c = 0;
  for (; c + 16 <= C; c += 16) acc += act_load16(row + c);
  for (; c < C; ++c) tail += act_load(row, c);
  const float mean = (pax_lanes_sum(acc) + tail) / C;
  acc = (float16)(0.0f);
  tail = 0.0f;
  for (c = 0; c + 16 <= C; c += 16) {
    const float16 d = act_load16(row + c) - mean;
    acc = fma(d, d, acc);
  }
  for (; c < C; ++c) tail += (act_load(row, c) - mean) * (act_load(row, c) - mean);
  const float rstd = rsqrt((pax_lanes_sum(acc) + tail) / C + eps);
  for (c = 0; c + 16 <= C; c += 16) {
    const float16 y = (act_load16(row + c) - mean) * rstd * act_load16(w + c) + act_load16(b + c);
    act_store16(out + at + c, y);
  }
  for (; c < C; ++c) act_store(out, at + c, (act_load(row, c) - mean) * rstd * act_load(w, c) + act_load(b, c));
  mean_out[n] = mean;
  rstd_out[n] = rstd;
}

__kernel void layernorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                    __global const act_t* w, __global const float* mean,
                                    __global const float* rstd, __global const act_t* dresid, const uint N,
                                    const uint C, const uint has_resid) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  const float mu = mean[n], rs = rstd[n];
  float16 acc1 = (float16)(0.0f), acc2 = (float16)(0.0f);
  float t1 = 0.0f, t2 = 0.0f;
  uint c = 0;
  for (; c + 16 <= C; c += 16) {
    const float16 dnorm = act_load16(dout + at + c) * act_load16(w + c);
    acc1 += dnorm;
    acc2 = fma(dnorm, (act_load16(x + at + c) - mu) * rs, acc2);
  }
  for (; c < C; ++c) {
    const float dnorm = act_load(dout, at + c) * act_load(w, c);
    t1 += dnorm;
    t2 += dnorm * (act_load(x, at + c) - mu) * rs;
  }
  const float dnorm_mean = (pax_lanes_sum(acc1) + t1) / C, dnorm_norm_mean = (pax_lanes_sum(acc2) + t2) / C;
  for (c = 0; c + 16 <= C; c += 16) {
    const float16 norm = (act_load16(x + at + c) - mu) * rs;
    float16 g = (act_load16(dout + at + c) * act_load16(w + c) - dnorm_mean - norm * dnorm_norm_mean) * rs;
    if (has_resid) g += act_load16(dresid + at + c);
    act_store16(dx + at + c, g);
  }
  for (; c < C; ++c) {
    const float norm = (act_load(x, at + c) - mu) * rs;
    const float g = (act_load(dout, at + c) * act_load(w, c) - dnorm_mean - norm * dnorm_norm_mean) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + g : g);
  }
}

// One 16-column block per work-item, rows in order.
__kernel void layernorm_backward_params(__global float* dw, __global float* db, __global const act_t* dout,
                                        __global const act_t* x, __global const float* mean,
                                        __global const float* rstd, const uint N, const uint C) {
  const uint c0 = get_global_id(0) * 16;
  if (c0 >= C) return;
  if (c0 + 16 <= C) {
    float16 acc_w = (float16)(0.0f), acc_b = (float16)(0.0f);
    for (uint n = 0; n < N; ++n) {
      const float16 d = act_load16(dout + (size_t)n * C + c0);
      acc_w = fma(d, (act_load16(x + (size_t)n * C + c0) - mean[n]) * rstd[n], acc_w);
      acc_b += d;
    }
    vstore16(vload16(0, dw + c0) + acc_w, 0, dw + c0);
    vstore16(vload16(0, db + c0) + acc_b, 0, db + c0);
  } else {
    for (uint c = c0; c < C; ++c) {
      float acc_w = 0.0f, acc_b = 0.0f;
      for (uint n = 0; n < N; ++n) {
        const float d = act_load(dout, (size_t)n * C + c);
        acc_w += d * (act_load(x, (size_t)n * C + c) - mean[n]) * rstd[n];
        acc_b += d;
      }
      dw[c] += acc_w;
      db[c] += acc_b;
    }
  }
}
