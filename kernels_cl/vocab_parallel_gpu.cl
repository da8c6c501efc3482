// Vocabulary-parallel softmax cross-entropy, GPU twin of vocab_parallel.cl (group_reduce.cl
// prepended; the same partials contract). partial_stats runs after pax_softmax_chunk_stats over
// this device's real columns (launched by the launcher) and folds a row's chunk statistics into
// its (max, sum of exp, target logit) triple; finish is a work-group per chunk of a row, as
// cross_entropy_gpu.cl's second pass.

// partials[rank, n, :] from stats (N, chunks, 4), a work-item per row. As the portable kernel, an
// empty block's max is -FLT_MAX and its sum 0.
PAX_GPU_KERNEL void vocab_parallel_partial_stats(__global const float* stats, __global float* partials,
                                                 const uint N, const uint chunks, const uint rank) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  float target_logit;
  const pax_softmax_state row = pax_softmax_row_stats(stats, n, chunks, &target_logit);
  __global float* out = partials + ((size_t)rank * N + n) * 3;
  out[0] = row.s == 0.0f ? -FLT_MAX : row.m;
  out[1] = row.s;
  out[2] = target_logit;
}

// Group (j, n): the row's logsumexp from the P device partials in rank order (as the portable
// kernel), chunk j of this device's logits -> dlogits; the row's first group writes the loss and
// the correct flag (target logit >= the max).
PAX_GPU_KERNEL void vocab_parallel_finish(__global act_t* logits, __global const float* partials,
                                          __global float* losses, __global float* correct,
                                          __global const int* targets, __global const float* weights, const uint N,
                                          const uint Vl, const uint real, const uint vocab_begin, const uint P,
                                          const float inv_weight_sum) {
  const uint j = get_group_id(0), n = get_group_id(1), lid = get_local_id(0);
  if (n >= N) return;
  float mx = -FLT_MAX;
  for (uint r = 0; r < P; ++r) mx = fmax(mx, partials[((size_t)r * N + n) * 3]);
  float sum = 0.0f, target_logit = 0.0f;
  for (uint r = 0; r < P; ++r) {
    __global const float* s = partials + ((size_t)r * N + n) * 3;
    sum += s[1] * exp(s[0] - mx);
    target_logit += s[2];
  }
  const float lse = mx + log(sum);
  const float w = weights[n];
  if (j == 0 && lid == 0) {
    losses[n] = w * (lse - target_logit);
    correct[n] = target_logit >= mx ? w : 0.0f;
  }
  const uint target = (uint)targets[n] - vocab_begin;  // wraps below the shard: then >= real
  const uint begin = j * PAX_SOFTMAX_CHUNK;
  pax_softmax_chunk_gradient(logits + (size_t)n * Vl, Vl, begin, min(Vl, begin + PAX_SOFTMAX_CHUNK), real, target,
                             lse, w * inv_weight_sum);
}
