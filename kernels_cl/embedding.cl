// Token + position embedding. Rows are positions bt = b*T + t of the batch. Activations and the
// weights as read (the step's copy) are act_t (kernels_cl/dtype.cl); gradients of the float32
// parameters are float and summed in float.

// out[bt, c] = wte[ids[bt] - vocab_begin, c] + wpe[t, c]   out: (B*T, C)  wte: (vocab_rows, C)  wpe: (maxT, C)
// wte holds rows [vocab_begin, vocab_begin + vocab_rows) of the vocabulary (a tensor-parallel
// shard); a token outside them adds nothing (another device adds its row). The unsigned
// difference wraps for ids below vocab_begin, so one comparison tests both ends.
__kernel void embedding_forward(__global act_t* out, __global const int* ids, __global const act_t* wte,
                                __global const act_t* wpe, const uint T, const uint C, const uint n,
                                const uint pos0, const uint wpe_row_stride, const uint vocab_begin,
                                const uint vocab_rows) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint bt = i / C, c = i % C;
  const uint row = (uint)ids[bt] - vocab_begin;
  const float token = row < vocab_rows ? act_load(wte, (size_t)row * C + c) : 0.0f;
  act_store(out, i, token + act_load(wpe, (size_t)(bt % T + pos0) * wpe_row_stride + c));
}

// dwpe[t, c] += sum_b dout[b, t, c], summed in order of b (deterministic).   dwpe: (T, C)
__kernel void embedding_backward_wpe(__global float* dwpe, __global const act_t* dout, const uint B, const uint T,
                                     const uint C) {
  const uint i = get_global_id(0);
  if (i >= T * C) return;
  float acc = 0.0f;
  for (uint b = 0; b < B; ++b) acc += act_load(dout, (size_t)b * T * C + i);
  dwpe[i] += acc;
}

// dwte[tokens[u], c] += sum of dout[positions[p], c] for p in [starts[u], starts[u+1]).
// The host groups positions by token (ascending), so each row has one writer and a fixed
// summation order: no atomics, bit-reproducible.          tokens: (U)  starts: (U+1)  positions: (B*T)
__kernel void embedding_backward_wte(__global float* dwte, __global const act_t* dout, __global const int* tokens,
                                     __global const int* starts, __global const int* positions, const uint U,
                                     const uint C) {
  const uint i = get_global_id(0);
  if (i >= U * C) return;
  const uint u = i / C, c = i % C;
  float acc = 0.0f;
  for (int p = starts[u]; p < starts[u + 1]; ++p) acc += act_load(dout, (size_t)positions[p] * C + c);
  dwte[(size_t)tokens[u] * C + c] += acc;
}
