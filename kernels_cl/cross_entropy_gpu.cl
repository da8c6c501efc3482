// Fused softmax + cross-entropy, GPU twin of cross_entropy.cl (group_reduce.cl prepended; same
// results up to float rounding, the same first-argmax rule). A row of Vp columns is split into
// chunks of PAX_SOFTMAX_CHUNK columns, a work-group each, in two passes:
//   1. pax_softmax_chunk_stats (group_reduce.cl): each chunk's max, sum of exp, first argmax and
//      the target's logit -> stats (N, chunks, 4);
//   2. softmax_cross_entropy below: each group combines its row's chunk statistics in chunk order
//      (all groups of a row agree bit for bit) and overwrites its chunk with the gradient; the
//      row's first group writes the loss and the correct flag.
// Logits are read twice and written once; no work-item loops over a whole row.

// logits (N, Vp) -> dlogits in place; losses, correct (N); columns [V, Vp) padding -> 0.
PAX_GPU_KERNEL void softmax_cross_entropy(__global act_t* logits, __global const float* stats,
                                          __global float* losses, __global float* correct,
                                          __global const int* targets, __global const float* weights,
                                          const uint N, const uint V, const uint Vp, const float inv_weight_sum) {
  const uint j = get_group_id(0), n = get_group_id(1), chunks = get_num_groups(0), lid = get_local_id(0);
  if (n >= N) return;
  float target_logit;
  const pax_softmax_state row_stats = pax_softmax_row_stats(stats, n, chunks, &target_logit);
  const float lse = row_stats.m + log(row_stats.s);
  const uint target = (uint)targets[n];
  const float w = weights[n];
  if (j == 0 && lid == 0) {
    losses[n] = w * (lse - target_logit);
    correct[n] = row_stats.i == target ? w : 0.0f;
  }
  const float g = w * inv_weight_sum;
  __global act_t* row = logits + (size_t)n * Vp;
  const uint end = min(Vp, (j + 1) * PAX_SOFTMAX_CHUNK);
  for (uint v = j * PAX_SOFTMAX_CHUNK + lid; v < end; v += PAX_WG) {
    const float d = v < V ? g * (exp(act_load(row, v) - lse) - (v == target ? 1.0f : 0.0f)) : 0.0f;
    act_store(row, v, d);
  }
}
