// CPU variant of cross_entropy.cl (PoCL): the same fused softmax + cross-entropy, one row per
// work-item, with float16 vectors along the vocabulary; types as in cross_entropy.cl. The first
// argmax comes out of the max pass: each lane keeps the first column where its running max was
// reached (a scan after it, element by element, cost about as much as the other three passes).
#define PAX_NO_COLUMN 0xffffffffu
__kernel void softmax_cross_entropy(__global act_t* logits, __global float* losses, __global float* correct,
                                    __global const int* targets,
                                    __global const float* weights, const uint N, const uint V, const uint Vp,
                                    const float inv_weight_sum) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global act_t* row = logits + (size_t)n * Vp;
  float16 m16 = (float16)(-INFINITY);
  uint16 first16 = (uint16)(PAX_NO_COLUMN);  // per lane: the first column holding m16 (NaNs never do)
  const uint16 lanes = (uint16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  float mx = -INFINITY;
  uint v = 0;
  for (; v + 16 <= V; v += 16) {
    const float16 x = act_load16(row + v);
    const int16 first = (x > m16) | ((x == m16) & (first16 == (uint16)(PAX_NO_COLUMN)));
    first16 = select(first16, (uint16)(v) + lanes, first);
    m16 = fmax(m16, x);
  }
  const uint tail = v;
  for (; v < V; ++v) mx = fmax(mx, act_load(row, v));
  const float8 m8 = fmax(m16.lo, m16.hi);
  const float4 m4 = fmax(m8.lo, m8.hi);
  mx = fmax(mx, fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w)));
  // The first maximum: the smallest lane column at mx, else the tail's first, else (a row with no
  // column equal to its max: NaNs) the last column, as a scan from the start would give.
  const uint16 at_max = select((uint16)(PAX_NO_COLUMN), first16, m16 == (float16)(mx));
  const uint8 a8 = min(at_max.lo, at_max.hi);
  const uint4 a4 = min(a8.lo, a8.hi);
  uint argmax = min(min(a4.x, a4.y), min(a4.z, a4.w));
  for (v = tail; argmax == PAX_NO_COLUMN && v < V; ++v) {
    if (act_load(row, v) == mx) argmax = v;
  }
  if (argmax == PAX_NO_COLUMN) argmax = V - 1;
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
  correct[n] = argmax == (uint)target ? w : 0.0f;
  const float g = w * inv_weight_sum;
  for (v = 0; v + 16 <= V; v += 16) act_store16(row + v, g * exp(act_load16(row + v) - lse));
  for (; v < V; ++v) act_store(row, v, g * exp(act_load(row, v) - lse));
  // The target's entry from its logit, in float: a 16-bit row would otherwise be rounded twice.
  const float p_target = g * exp(target_logit - lse);
  act_store(row, target, p_target - g);
  for (v = V; v < Vp; ++v) act_store(row, v, 0.0f);
}
