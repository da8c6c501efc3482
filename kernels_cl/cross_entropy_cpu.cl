// CPU variant of cross_entropy.cl (PoCL): the same fused softmax + cross-entropy, one row per
// work-item, with float16 vectors along the vocabulary.
__kernel void softmax_cross_entropy(__global float* logits, __global float* losses, __global float* correct,
                                    __global const int* targets,
                                    __global const float* weights, const uint N, const uint V, const uint Vp,
                                    const float inv_weight_sum) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global float* row = logits + (size_t)n * Vp;
  float16 m16 = (float16)(-INFINITY);
  float mx = -INFINITY;
  uint v = 0;
  for (; v + 16 <= V; v += 16) m16 = fmax(m16, vload16(0, row + v));
  for (; v < V; ++v) mx = fmax(mx, row[v]);
  const float8 m8 = fmax(m16.lo, m16.hi);
  const float4 m4 = fmax(m8.lo, m8.hi);
  mx = fmax(mx, fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w)));
  float16 s16 = (float16)(0.0f);
  float sum = 0.0f;
  for (v = 0; v + 16 <= V; v += 16) s16 += exp(vload16(0, row + v) - mx);
  for (; v < V; ++v) sum += exp(row[v] - mx);
  const float8 s8 = s16.lo + s16.hi;
  const float4 s4 = s8.lo + s8.hi;
  sum += (s4.x + s4.y) + (s4.z + s4.w);
  const float lse = mx + log(sum);
  const int target = targets[n];
  const float w = weights[n];
  losses[n] = w * (lse - row[target]);
  uint argmax = 0;  // the first maximum, before the row is overwritten
  while (argmax + 1 < V && row[argmax] != mx) ++argmax;
  correct[n] = argmax == (uint)target ? w : 0.0f;
  const float g = w * inv_weight_sum;
  for (v = 0; v + 16 <= V; v += 16) vstore16(g * exp(vload16(0, row + v) - lse), 0, row + v);
  for (; v < V; ++v) row[v] = g * exp(row[v] - lse);
  row[target] -= g;
  for (v = V; v < Vp; ++v) row[v] = 0.0f;
}
