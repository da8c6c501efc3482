// RMSNorm, GPU twin of rmsnorm.cl (same kernels, arguments and results up to float rounding;
// group_reduce.cl prepended), shaped as layernorm_gpu.cl: a team of PAX_ROW_TEAM work-items per
// row, the first RMS_CACHED columns per lane in registers (loaded all at once), tree sums over the
// team in local memory, and the weight gradient as a two-stage column reduction
// (rmsnorm_backward_scale's row-block partials, then pax_add_block_sums).

#define RMS_CACHED PAX_NORM_CACHED

// x, delta, sum_out, out: (N, C)   w: (C)   rstd_out: (N)
PAX_GPU_KERNEL void rmsnorm_forward(__global act_t* out, __global float* rstd_out, __global act_t* sum_out,
                                    __global const act_t* x, __global const act_t* delta, __global const act_t* w,
                                    const uint N, const uint C, const float eps, const uint has_delta) {
  __local float scratch[PAX_WG];
  PAX_TEAM_ROW_AND_LANE
  __global const act_t* row = has_delta ? sum_out + at : x + at;
  float v[RMS_CACHED];
  pax_norm_input_cached(v, sum_out, x, delta, at, lane, cols, has_delta);
  float sum_sq = 0.0f;
#pragma unroll
  for (uint k = 0; k < RMS_CACHED; ++k) sum_sq += v[k] * v[k];
  for (uint c = lane + RMS_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    const float value = pax_norm_input(sum_out, x, delta, at, c, has_delta);
    sum_sq += value * value;
  }
  const float rstd = rsqrt(pax_team_sum(sum_sq, scratch, PAX_ROW_TEAM) / C + eps);
#pragma unroll
  for (uint k = 0; k < RMS_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    if (c < cols) act_store(out, at + c, v[k] * rstd * act_load(w, c));
  }
  for (uint c = lane + RMS_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    act_store(out, at + c, act_load(row, c) * rstd * act_load(w, c));
  }
  if (lane == 0 && n < N) rstd_out[n] = rstd;
}

// dx = (dresid +) rstd * (g - xhat * mean_c(g * xhat)),  g = dout * w,  xhat = x * rstd.
PAX_GPU_KERNEL void rmsnorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                        __global const act_t* w, __global const float* rstd,
                                        __global const act_t* dresid, const uint N, const uint C,
                                        const uint has_resid) {
  __local float scratch[PAX_WG];
  PAX_TEAM_ROW_AND_LANE
  const float rs = cols ? rstd[n] : 0.0f;
  float g_c[RMS_CACHED], xhat_c[RMS_CACHED];
  pax_norm_grad_cached(g_c, xhat_c, dout, w, x, at, lane, cols, 0.0f, rs);
  float sum = 0.0f;
#pragma unroll
  for (uint k = 0; k < RMS_CACHED; ++k) sum += g_c[k] * xhat_c[k];
  for (uint c = lane + RMS_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    sum += act_load(dout, at + c) * act_load(w, c) * (act_load(x, at + c) * rs);
  }
  const float g_xhat_mean = pax_team_sum(sum, scratch, PAX_ROW_TEAM) / C;
#pragma unroll
  for (uint k = 0; k < RMS_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    if (c >= cols) continue;
    const float d = (g_c[k] - xhat_c[k] * g_xhat_mean) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + d : d);
  }
  for (uint c = lane + RMS_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    const float g = act_load(dout, at + c) * act_load(w, c), xhat = act_load(x, at + c) * rs;
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
  PAX_LOADS_IN_FLIGHT
  for (uint n = block * rows_per_block; n < end; ++n) {
    acc += act_load(dout, (size_t)n * C + c) * act_load(x, (size_t)n * C + c) * rstd[n];
  }
  partials[(size_t)block * C + c] = acc;
}
