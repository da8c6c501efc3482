// RMSNorm, GPU twin of rmsnorm.cl (same kernels, arguments and results up to float rounding;
// group_reduce.cl prepended), shaped as layernorm_gpu.cl: a work-group per row with the first
// RMS_CACHED columns per work-item in registers, tree sums in local memory, and the weight
// gradient as a two-stage column reduction (rmsnorm_backward_scale's row-block partials, then
// pax_add_block_sums).

#define RMS_CACHED 8

// x, delta, sum_out, out: (N, C)   w: (C)   rstd_out: (N)
PAX_GPU_KERNEL void rmsnorm_forward(__global act_t* out, __global float* rstd_out, __global act_t* sum_out,
                                    __global const act_t* x, __global const act_t* delta, __global const act_t* w,
                                    const uint N, const uint C, const float eps, const uint has_delta) {
  __local float scratch[PAX_WG];
  const uint n = get_group_id(0), lid = get_local_id(0);
  if (n >= N) return;  // the whole group: no barrier is left waiting
  const size_t at = (size_t)n * C;
  __global const act_t* row = has_delta ? sum_out + at : x + at;
  float v[RMS_CACHED];
  float sum_sq = 0.0f;
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    float value = act_load(x, at + c);
    if (has_delta) {  // normalise the sum as stored: round it through act_t
      act_store(sum_out, at + c, value + act_load(delta, at + c));
      value = act_load(sum_out, at + c);
    }
    if (k < RMS_CACHED) v[k] = value;
    sum_sq += value * value;
  }
  const float rstd = rsqrt(pax_group_sum(sum_sq, scratch) / C + eps);
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float value = k < RMS_CACHED ? v[k] : act_load(row, c);
    act_store(out, at + c, value * rstd * act_load(w, c));
  }
  if (lid == 0) rstd_out[n] = rstd;
}

// dx = (dresid +) rstd * (g - xhat * mean_c(g * xhat)),  g = dout * w,  xhat = x * rstd.
PAX_GPU_KERNEL void rmsnorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                        __global const act_t* w, __global const float* rstd,
                                        __global const act_t* dresid, const uint N, const uint C,
                                        const uint has_resid) {
  __local float scratch[PAX_WG];
  const uint n = get_group_id(0), lid = get_local_id(0);
  if (n >= N) return;  // the whole group: no barrier is left waiting
  const size_t at = (size_t)n * C;
  const float rs = rstd[n];
  float g_c[RMS_CACHED], xhat_c[RMS_CACHED];
  float sum = 0.0f;
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float g = act_load(dout, at + c) * act_load(w, c), xhat = act_load(x, at + c) * rs;
    if (k < RMS_CACHED) {
      g_c[k] = g;
      xhat_c[k] = xhat;
    }
    sum += g * xhat;
  }
  const float g_xhat_mean = pax_group_sum(sum, scratch) / C;
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float g = k < RMS_CACHED ? g_c[k] : act_load(dout, at + c) * act_load(w, c);
    const float xhat = k < RMS_CACHED ? xhat_c[k] : act_load(x, at + c) * rs;
    const float d = (g - xhat * g_xhat_mean) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + d : d);
  }
}

// Stage 1 of dw[c] += sum_n dout[n,c] * x[n,c] * rstd[n]: group (s, b) covers the column
// strip s of the row block b, rows in order, and writes partials (blocks, C).
PAX_GPU_KERNEL void rmsnorm_backward_scale(__global float* partials, __global const act_t* dout,
                                           __global const act_t* x, __global const float* rstd, const uint N,
                                           const uint C, const uint rows_per_block) {
  const uint block = get_group_id(1), c = get_global_id(0);
  if (c >= C) return;
  const uint end = min(N, (block + 1) * rows_per_block);
  float acc = 0.0f;
  for (uint n = block * rows_per_block; n < end; ++n) {
    acc += act_load(dout, (size_t)n * C + c) * act_load(x, (size_t)n * C + c) * rstd[n];
  }
  partials[(size_t)block * C + c] = acc;
}
