// LayerNorm, GPU twin of layernorm.cl (same kernels, arguments and results up to float rounding;
// group_reduce.cl prepended). A team of PAX_ROW_TEAM work-items per row, PAX_ROWS_PER_GROUP rows
// per work-group (KernelSet::launch_row_teams): lane l of a team holds the row's columns
// l + k PAX_ROW_TEAM (coalesced across the team), the first LN_CACHED of them in registers, loaded
// in an unrolled loop so that all of a lane's loads are in flight at once; a row longer than
// LN_CACHED * PAX_ROW_TEAM re-reads its tail from global memory. (A group of 256 per row of 768
// spent its time in two 8-level trees for 3 columns a work-item.) Statistics are fixed-order tree
// sums over the team in local memory. The parameter gradients are a two-stage column reduction:
// layernorm_backward_params writes one partial (dw, db) row per block of rows_per_block rows;
// pax_add_block_sums then adds the blocks' partials, in order, into dw and db.

#define LN_CACHED PAX_NORM_CACHED

// out = (v - mean) * rstd * w + b, v = x (+ delta)     x, delta, sum_out, out: (N, C)   mean, rstd: (N)
PAX_GPU_KERNEL void layernorm_forward(__global act_t* out, __global float* mean_out, __global float* rstd_out,
                                      __global act_t* sum_out, __global const act_t* x, __global const act_t* delta,
                                      __global const act_t* w, __global const act_t* b, const uint N, const uint C,
                                      const float eps, const uint has_delta) {
  __local float scratch[PAX_WG];
  PAX_TEAM_ROW_AND_LANE
  __global const act_t* row = has_delta ? sum_out + at : x + at;
  float v[LN_CACHED];
  pax_norm_input_cached(v, sum_out, x, delta, at, lane, cols, has_delta);
  float sum = 0.0f;
#pragma unroll
  for (uint k = 0; k < LN_CACHED; ++k) sum += v[k];
  for (uint c = lane + LN_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    sum += pax_norm_input(sum_out, x, delta, at, c, has_delta);
  }
  const float mean = pax_team_sum(sum, scratch, PAX_ROW_TEAM) / C;
  float var = 0.0f;
#pragma unroll
  for (uint k = 0; k < LN_CACHED; ++k) {
    const float d = v[k] - mean;
    if (lane + k * PAX_ROW_TEAM < cols) var += d * d;
  }
  for (uint c = lane + LN_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    const float d = act_load(row, c) - mean;
    var += d * d;
  }
  const float rstd = rsqrt(pax_team_sum(var, scratch, PAX_ROW_TEAM) / C + eps);
#pragma unroll
  for (uint k = 0; k < LN_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    if (c < cols) act_store(out, at + c, (v[k] - mean) * rstd * act_load(w, c) + act_load(b, c));
  }
  for (uint c = lane + LN_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    act_store(out, at + c, (act_load(row, c) - mean) * rstd * act_load(w, c) + act_load(b, c));
  }
  if (lane == 0 && n < N) {
    mean_out[n] = mean;
    rstd_out[n] = rstd;
  }
}

// dx = (dresid +) rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * w.
PAX_GPU_KERNEL void layernorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                          __global const act_t* w, __global const float* mean,
                                          __global const float* rstd, __global const act_t* dresid, const uint N,
                                          const uint C, const uint has_resid) {
  __local float2 scratch[PAX_WG];
  PAX_TEAM_ROW_AND_LANE
  const float mu = cols ? mean[n] : 0.0f, rs = cols ? rstd[n] : 0.0f;
  float dnorm_c[LN_CACHED], norm_c[LN_CACHED];
  pax_norm_grad_cached(dnorm_c, norm_c, dout, w, x, at, lane, cols, mu, rs);
  float2 sums = (float2)(0.0f, 0.0f);
#pragma unroll
  for (uint k = 0; k < LN_CACHED; ++k) sums += (float2)(dnorm_c[k], dnorm_c[k] * norm_c[k]);
  for (uint c = lane + LN_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    const float dnorm = act_load(dout, at + c) * act_load(w, c), norm = (act_load(x, at + c) - mu) * rs;
    sums += (float2)(dnorm, dnorm * norm);
  }
  const float2 means = pax_team_sum2(sums, scratch, PAX_ROW_TEAM) / (float)C;
#pragma unroll
  for (uint k = 0; k < LN_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    if (c >= cols) continue;
    const float g = (dnorm_c[k] - means.x - norm_c[k] * means.y) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + g : g);
  }
  for (uint c = lane + LN_CACHED * PAX_ROW_TEAM; c < cols; c += PAX_ROW_TEAM) {
    const float dnorm = act_load(dout, at + c) * act_load(w, c), norm = (act_load(x, at + c) - mu) * rs;
    const float g = (dnorm - means.x - norm * means.y) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + g : g);
  }
}

// Stage 1 of dw[c] += sum_n dout[n,c] * norm[n,c], db[c] += sum_n dout[n,c]: group g covers the
// column strip g % strips (PAX_WG columns) of the row block g / strips and writes its sums to
// partials (2, blocks, C): [0] the dw terms, [1] the db terms. Rows of a block in order.
PAX_GPU_KERNEL void layernorm_backward_params(__global float* partials, __global const act_t* dout,
                                              __global const act_t* x, __global const float* mean,
                                              __global const float* rstd, const uint N, const uint C,
                                              const uint rows_per_block) {
  const uint blocks = get_num_groups(1), block = get_group_id(1), c = get_global_id(0);
  if (c >= C) return;
  const uint end = min(N, (block + 1) * rows_per_block);
  float acc_w = 0.0f, acc_b = 0.0f;
  PAX_LOADS_IN_FLIGHT
  for (uint n = block * rows_per_block; n < end; ++n) {
    const float d = act_load(dout, (size_t)n * C + c);
    acc_w += d * (act_load(x, (size_t)n * C + c) - mean[n]) * rstd[n];
    acc_b += d;
  }
  partials[(size_t)block * C + c] = acc_w;
  partials[((size_t)blocks + block) * C + c] = acc_b;
}
