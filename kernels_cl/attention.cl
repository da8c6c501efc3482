// Causal multi-head attention pieces around GEMMs (models/layers/causal_attention.cpp composes
// them). Score blocks: (G, Q, K) for a chunk of G heads of one sequence and a block of Q queries
// q0 .. q0+Q-1, against keys 0 .. K-1 (K = q0 + Q: the block's whole causal range). Row r is
// query t = q0 + r % Q of head r / Q, with t + 1 live entries; row statistics (lse, delta) are
// indexed (b, h, t), the chunk's first head at lse_offset / delta_offset, its heads S apart (T for
// consecutive heads; G*T for every G-th head, grouped-query attention's batches).
// Scores, probabilities and the row statistics are float whatever the activations' type (the
// score GEMMs write float; softmax runs in float, in place); out and dout are act_t activations
// (kernels_cl/dtype.cl).

// Row r's causal length L, its statistic's index `at` (from lse_offset / delta_offset) and its
// scores `row` in the block.
#define BLOCK_ROW(s, r)                                    \
  const uint L = q0 + (r) % Q + 1;                         \
  const size_t at = (size_t)((r) / Q) * S + q0 + (r) % Q;  \
  __global float* row = (s) + (size_t)(r) * K;

// In place on scores s (G, Q, K): p[t, u] = exp(scale*s[t,u] - lse[t]) for u <= t, 0 above the
// diagonal; lse[g, t] = log sum_{u<=t} exp(scale*s[t,u]).   One work-item per row.
__kernel void causal_softmax_forward(__global float* s, __global float* lse, const uint Q, const uint K, const uint q0,
                                     const uint S, const float scale, const uint lse_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  BLOCK_ROW(s, r)
  float mx = -INFINITY;
  for (uint u = 0; u < L; ++u) mx = fmax(mx, scale * row[u]);
  float sum = 0.0f;
  for (uint u = 0; u < L; ++u) sum += exp(scale * row[u] - mx);
  const float l = mx + log(sum);
  for (uint u = 0; u < L; ++u) row[u] = exp(scale * row[u] - l);
  for (uint u = L; u < K; ++u) row[u] = 0.0f;
  lse[lse_offset + at] = l;
}

// Backward recomputation: p[t, u] = exp(scale*s[t,u] - lse[t]) for u <= t, else 0 (in place).
__kernel void causal_probs_from_lse(__global float* s, __global const float* lse, const uint Q, const uint K,
                                    const uint q0, const uint S, const float scale, const uint lse_offset,
                                    const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  BLOCK_ROW(s, r)
  const float l = lse[lse_offset + at];
  for (uint u = 0; u < L; ++u) row[u] = exp(scale * row[u] - l);
  for (uint u = L; u < K; ++u) row[u] = 0.0f;
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

// In place on dp (G, Q, K): ds[t, u] = scale * p[t,u] * (dp[t,u] - delta[t]) for u <= t, else 0.
__kernel void causal_softmax_backward(__global float* dp, __global const float* p, __global const float* delta,
                                      const uint Q, const uint K, const uint q0, const uint S, const float scale,
                                      const uint delta_offset, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  BLOCK_ROW(dp, r)
  const float dl = delta[delta_offset + at];
  __global const float* prow = p + (size_t)r * K;
  for (uint u = 0; u < L; ++u) row[u] = scale * prow[u] * (row[u] - dl);
  for (uint u = L; u < K; ++u) row[u] = 0.0f;
}
