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
  // One work-item combines the row's chunk statistics and shares them: every work-item doing it
  // cost more than the chunk's own exps (50304 columns: 25 chunks, 409K groups at T1024 B16).
  __local float row[3];  // logsumexp, target logit, first argmax (as_float)
  const uint j = get_group_id(0), n = get_group_id(1), chunks = get_num_groups(0), lid = get_local_id(0);
  if (lid == 0 && n < N) {
    float target_logit;
    const pax_softmax_state row_stats = pax_softmax_row_stats(stats, n, chunks, &target_logit);
    row[0] = row_stats.m + log(row_stats.s);
    row[1] = target_logit;
    row[2] = as_float(row_stats.i);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  // The guard after the barrier: PoCL 3.1 crashes building a kernel that returns before one.
  if (n >= N) return;
  const float lse = row[0];
  const uint target = (uint)targets[n];
  const float w = weights[n];
  if (j == 0 && lid == 0) {
    losses[n] = w * (lse - row[1]);
    correct[n] = as_uint(row[2]) == target ? w : 0.0f;
  }
  const uint begin = j * PAX_SOFTMAX_CHUNK;
  pax_softmax_chunk_gradient(logits + (size_t)n * Vp, Vp, begin, min(Vp, begin + PAX_SOFTMAX_CHUNK), V, target, lse,
                             w * inv_weight_sum);
}
