// CPU variant of cross_entropy.cl (PoCL): the same fused softmax + cross-entropy, one row per
// work-item, with float16 vectors along the vocabulary; types as in cross_entropy.cl.
__kernel void softmax_cross_entropy(__global act_t* logits, __global float* losses, __global float* correct,
                                    __global const int* targets,
                                    __global const float* weights, const uint N, const uint V, const uint Vp,
                                    const float inv_weight_sum) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global act_t* row = logits + (size_t)n * Vp;
  float16 m16 = (float16)(-INFINITY);
  float mx = -INFINITY;
  uint v = 0;
  for (; v + 16 <= V; v += 16) m16 = fmax(m16, act_load16(row + v));
  for (; v < V; ++v) mx = fmax(mx, act_load(row, v));
  const float8 m8 = fmax(m16.lo, m16.hi);
  const float4 m4 = fmax(m8.lo, m8.hi);
  mx = fmax(mx, fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w)));
  float16 s16 = (float16)(0.0f);
  float sum = 0.0f;
  for (v = 0; v + 16 <= V; v += 16) s16 += exp(act_load16(row + v) - mx);
  for (; v < V; ++v) sum += exp(act_load(row, v) - mx);
  const float8 s8 = s16.lo + s16.hi;
  const float4 s4 = s8.lo + s8.hi;
  sum += (s4.x + s4.y) + (s4.z + s4.w);
  const float lse = mx + log(sum);
  const int target = targets[n];
  const float w = weights[n];
  const float target_logit = act_load(row, target);
  losses[n] = w * (lse - target_logit);
  uint argmax = 0;  // the first maximum, before the row is overwritten
  while (argmax + 1 < V && act_load(row, argmax) != mx) ++argmax;
  correct[n] = argmax == (uint)target ? w : 0.0f;
  const float g = w * inv_weight_sum;
  for (v = 0; v + 16 <= V; v += 16) act_store16(row + v, g * exp(act_load16(row + v) - lse));
  for (; v < V; ++v) act_store(row, v, g * exp(act_load(row, v) - lse));
  // The target's entry from its logit, in float: a 16-bit row would otherwise be rounded twice.
  const float p_target = g * exp(target_logit - lse);
  act_store(row, target, p_target - g);
  for (v = V; v < Vp; ++v) act_store(row, v, 0.0f);
}
