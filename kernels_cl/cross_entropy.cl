// Fused softmax + cross-entropy over the vocabulary with per-token weights, forward and backward
// in one pass. One work-item per row. Columns [V, Vp) are vocabulary padding: excluded from the
// softmax, gradient 0.
//   losses[n]  = w[n] * (logsumexp(logits[n, :V]) - logits[n, target[n]])
//   correct[n] = w[n] if the first argmax of logits[n, :V] is the target, else 0
//   logits[n,v] <- w[n] * inv_weight_sum * (softmax[n,v] - [v == target[n]])   (in place: dlogits)
// logits: (N, Vp) act_t (kernels_cl/dtype.cl), read and overwritten in place; the max, the
// logsumexp, the losses and the weights are float.   targets, weights, losses: (N)
__kernel void softmax_cross_entropy(__global act_t* logits, __global float* losses, __global float* correct,
                                    __global const int* targets,
                                    __global const float* weights, const uint N, const uint V, const uint Vp,
                                    const float inv_weight_sum) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global act_t* row = logits + (size_t)n * Vp;
  float mx = -INFINITY;
  for (uint v = 0; v < V; ++v) mx = fmax(mx, act_load(row, v));
  float sum = 0.0f;
  for (uint v = 0; v < V; ++v) sum += exp(act_load(row, v) - mx);
  const float lse = mx + log(sum);
  const int target = targets[n];
  const float w = weights[n];
  losses[n] = w * (lse - act_load(row, target));
  uint argmax = 0;  // the first maximum, before the row is overwritten
  while (argmax + 1 < V && act_load(row, argmax) != mx) ++argmax;
  correct[n] = argmax == (uint)target ? w : 0.0f;
  const float g = w * inv_weight_sum;
  for (uint v = 0; v < V; ++v) act_store(row, v, g * (exp(act_load(row, v) - lse) - (v == (uint)target ? 1.0f : 0.0f)));
  for (uint v = V; v < Vp; ++v) act_store(row, v, 0.0f);
}
