// LayerNorm, GPU twin of layernorm.cl (same kernels, arguments and results up to float rounding;
// group_reduce.cl prepended). A work-group of PAX_WG work-items per row: work-item l holds the
// row's columns l, l + PAX_WG, ... (coalesced across the group) in registers, the first
// LN_CACHED of them; a row longer than LN_CACHED * PAX_WG re-reads its tail from global memory.
// Statistics are fixed-order tree sums in local memory. The parameter gradients are a two-stage
// column reduction: layernorm_backward_params writes one partial (dw, db) row per block of
// rows_per_block rows; pax_add_block_sums then adds the blocks' partials, in order, into dw and db.

#define LN_CACHED 8

// out = (v - mean) * rstd * w + b, v = x (+ delta)     x, delta, sum_out, out: (N, C)   mean, rstd: (N)
PAX_GPU_KERNEL void layernorm_forward(__global act_t* out, __global float* mean_out, __global float* rstd_out,
                                      __global act_t* sum_out, __global const act_t* x, __global const act_t* delta,
                                      __global const act_t* w, __global const act_t* b, const uint N, const uint C,
                                      const float eps, const uint has_delta) {
  __local float scratch[PAX_WG];
  const uint n = get_group_id(0), lid = get_local_id(0);
  if (n >= N) return;  // the whole group: no barrier is left waiting
  const size_t at = (size_t)n * C;
  __global const act_t* row = has_delta ? sum_out + at : x + at;
  float v[LN_CACHED];
  float sum = 0.0f;
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    float value = act_load(x, at + c);
    if (has_delta) {  // normalise the sum as stored: round it through act_t
      act_store(sum_out, at + c, value + act_load(delta, at + c));
      value = act_load(sum_out, at + c);
    }
    if (k < LN_CACHED) v[k] = value;
    sum += value;
  }
  const float mean = pax_group_sum(sum, scratch) / C;
  float var = 0.0f;
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float d = (k < LN_CACHED ? v[k] : act_load(row, c)) - mean;
    var += d * d;
  }
  const float rstd = rsqrt(pax_group_sum(var, scratch) / C + eps);
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float value = k < LN_CACHED ? v[k] : act_load(row, c);
    act_store(out, at + c, (value - mean) * rstd * act_load(w, c) + act_load(b, c));
  }
  if (lid == 0) {
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
  const uint n = get_group_id(0), lid = get_local_id(0);
  if (n >= N) return;  // the whole group: no barrier is left waiting
  const size_t at = (size_t)n * C;
  const float mu = mean[n], rs = rstd[n];
  float dnorm_c[LN_CACHED], norm_c[LN_CACHED];
  float2 sums = (float2)(0.0f, 0.0f);
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float dnorm = act_load(dout, at + c) * act_load(w, c);
    const float norm = (act_load(x, at + c) - mu) * rs;
    if (k < LN_CACHED) {
      dnorm_c[k] = dnorm;
      norm_c[k] = norm;
    }
    sums += (float2)(dnorm, dnorm * norm);
  }
  const float2 means = pax_group_sum2(sums, scratch) / (float)C;
  for (uint c = lid, k = 0; c < C; c += PAX_WG, ++k) {
    const float dnorm = k < LN_CACHED ? dnorm_c[k] : act_load(dout, at + c) * act_load(w, c);
    const float norm = k < LN_CACHED ? norm_c[k] : (act_load(x, at + c) - mu) * rs;
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
  for (uint n = block * rows_per_block; n < end; ++n) {
    const float d = act_load(dout, (size_t)n * C + c);
    acc_w += d * (act_load(x, (size_t)n * C + c) - mean[n]) * rstd[n];
    acc_b += d;
  }
  partials[(size_t)block * C + c] = acc_w;
  partials[((size_t)blocks + block) * C + c] = acc_b;
}
