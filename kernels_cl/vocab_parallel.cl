// Softmax cross-entropy over a vocabulary split by columns over P devices (tensor parallelism):
// cross_entropy.cl's results from two passes around one collective. This device holds columns
// [vocab_begin, vocab_begin + Vl) of the padded vocabulary; the first `real` are real tokens, the
// rest padding (excluded from the softmax, gradient 0). One work-item per row.
// logits: (N, Vl) act_t (kernels_cl/dtype.cl); partials: (P, N, 3) float, per device and row
// (max, sum of exp(logit - max), target logit); targets, weights, losses, correct: (N).
// An empty block's max is -FLT_MAX, not -INFINITY: exp(-FLT_MAX - M) is 0 where exp(-inf - -inf)
// would be NaN.

// Where this device's column of target `target` is: the unsigned difference wraps for targets
// below vocab_begin, so `< real` rejects both sides (and padding columns).
inline uint vocab_parallel_local_column(const int target, const uint vocab_begin) {
  return (uint)target - vocab_begin;
}

// Pass 1: partials[rank, n, :] = (max, sum of exp(logit - max) over the real local columns,
// the target's logit if this device holds it, else 0). Other row blocks are left alone.
__kernel void vocab_parallel_partial_stats(__global const act_t* logits, __global float* partials,
                                           __global const int* targets, const uint N, const uint Vl,
                                           const uint real, const uint vocab_begin, const uint rank) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global const act_t* row = logits + (size_t)n * Vl;
  float mx = -FLT_MAX;
  for (uint v = 0; v < real; ++v) mx = fmax(mx, act_load(row, v));
  float sum = 0.0f;
  for (uint v = 0; v < real; ++v) sum += exp(act_load(row, v) - mx);
  const uint target = vocab_parallel_local_column(targets[n], vocab_begin);
  __global float* out = partials + ((size_t)rank * N + n) * 3;
  out[0] = mx;
  out[1] = sum;
  out[2] = target < real ? act_load(row, target) : 0.0f;
}

// Pass 2, with every device's partials (summed over the devices): the row's logsumexp from the
// P (max, sum) pairs in rank order (every device combines them alike, so all agree bit for bit),
// the loss and the correct flag, and this device's logits -> dlogits in place.
__kernel void vocab_parallel_finish(__global act_t* logits, __global const float* partials,
                                    __global float* losses, __global float* correct, __global const int* targets,
                                    __global const float* weights, const uint N, const uint Vl, const uint real,
                                    const uint vocab_begin, const uint P, const float inv_weight_sum) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  float mx = -FLT_MAX;
  for (uint r = 0; r < P; ++r) mx = fmax(mx, partials[((size_t)r * N + n) * 3]);
  float sum = 0.0f, target_logit = 0.0f;
  for (uint r = 0; r < P; ++r) {
    __global const float* stats = partials + ((size_t)r * N + n) * 3;
    sum += stats[1] * exp(stats[0] - mx);
    target_logit += stats[2];
  }
  const float lse = mx + log(sum);
  const float w = weights[n];
  losses[n] = w * (lse - target_logit);
  correct[n] = target_logit >= mx ? w : 0.0f;
  const float g = w * inv_weight_sum;
  const uint target = vocab_parallel_local_column(targets[n], vocab_begin);
  __global act_t* row = logits + (size_t)n * Vl;
  for (uint v = 0; v < real; ++v) act_store(row, v, g * (exp(act_load(row, v) - lse) - (v == target ? 1.0f : 0.0f)));
  for (uint v = real; v < Vl; ++v) act_store(row, v, 0.0f);
}
