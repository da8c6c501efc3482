// Causal multi-head attention pieces around GEMMs (models/layers/causal_attention.cpp composes
// them). Score blocks: (G, T, T) for a chunk of G heads of one sequence; row statistics (lse,
// delta) are indexed (b, h, t) with the chunk's first row at lse_offset / delta_offset.
// Scores, probabilities and the row statistics are float whatever the activations' type (the
// score GEMMs write float; softmax runs in float, in place); out and dout are act_t activations
// (kernels_cl/dtype.cl).

// In place on scores s (G, T, T): p[t, u] = exp(scale*s[t,u] - lse[t]) for u <= t, 0 above the
// diagonal; lse[g, t] = log sum_{u<=t} exp(scale*s[t,u]).   One work-item per row.  lse: (.., T) at lse_offset
__kernel void causal_softmax_forward(__global float* s, __global float* lse, const uint T, const float scale,
                                     const uint lse_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  const uint t = r % T;
  __global float* row = s + (size_t)r * T;
  float mx = -INFINITY;
  for (uint u = 0; u <= t; ++u) mx = fmax(mx, scale * row[u]);
  float sum = 0.0f;
  for (uint u = 0; u <= t; ++u) sum += exp(scale * row[u] - mx);
  const float l = mx + log(sum);
  for (uint u = 0; u <= t; ++u) row[u] = exp(scale * row[u] - l);
  for (uint u = t + 1; u < T; ++u) row[u] = 0.0f;
  lse[lse_offset + r] = l;
}

// Backward recomputation: p[t, u] = exp(scale*s[t,u] - lse[t]) for u <= t, else 0 (in place).
__kernel void causal_probs_from_lse(__global float* s, __global const float* lse, const uint T, const float scale,
                                    const uint lse_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  const uint t = r % T;
  const float l = lse[lse_offset + r];
  __global float* row = s + (size_t)r * T;
  for (uint u = 0; u <= t; ++u) row[u] = exp(scale * row[u] - l);
  for (uint u = t + 1; u < T; ++u) row[u] = 0.0f;
}

// delta[(b*NH + h)*T + t] = sum_d out[b,t, h*hs + d] * dout[b,t, h*hs + d]   (out, dout: (B*T, NH*hs))
// (= sum_u p[t,u] dp[t,u], the softmax backward's row term)
__kernel void attention_row_dot(__global float* delta, __global const act_t* out, __global const act_t* dout,
                                const uint T, const uint NH, const uint hs, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  const uint t = r % T, h = (r / T) % NH, b = r / (T * NH);
  const size_t base = ((size_t)b * T + t) * NH * hs + h * hs;
  float acc = 0.0f;
  for (uint d = 0; d < hs; ++d) acc += act_load(out, base + d) * act_load(dout, base + d);
  delta[r] = acc;
}

// In place on dp (G, T, T): ds[t, u] = scale * p[t,u] * (dp[t,u] - delta[t]) for u <= t, else 0.
__kernel void causal_softmax_backward(__global float* dp, __global const float* p, __global const float* delta,
                                      const uint T, const float scale, const uint delta_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  const uint t = r % T;
  const float dl = delta[delta_offset + r];
  __global float* row = dp + (size_t)r * T;
  __global const float* prow = p + (size_t)r * T;
  for (uint u = 0; u <= t; ++u) row[u] = scale * prow[u] * (row[u] - dl);
  for (uint u = t + 1; u < T; ++u) row[u] = 0.0f;
}
