// CPU variant of embedding.cl (PoCL): rows with float16 vectors; act_t as in embedding.cl.

// One row bt per work-item (n = B*T*C as in the portable kernel). A token outside wte's rows
// [vocab_begin, vocab_begin + vocab_rows) gets the position row alone, as in the portable kernel.
__kernel void embedding_forward(__global act_t* out, __global const int* ids, __global const act_t* wte,
                                __global const act_t* wpe, const uint T, const uint C, const uint n,
                                const uint pos0, const uint wpe_row_stride, const uint vocab_begin,
                                const uint vocab_rows) {
  const uint bt = get_global_id(0);
  if (bt * C >= n) return;
  const uint row = (uint)ids[bt] - vocab_begin;  // wraps for ids below vocab_begin
  __global const act_t* pe = wpe + (size_t)(bt % T + pos0) * wpe_row_stride;
  __global act_t* o = out + (size_t)bt * C;
  uint c = 0;
  if (row < vocab_rows) {
    __global const act_t* te = wte + (size_t)row * C;
    for (; c + 16 <= C; c += 16) act_store16(o + c, act_load16(te + c) + act_load16(pe + c));
    for (; c < C; ++c) act_store(o, c, act_load(te, c) + act_load(pe, c));
  } else {
    for (; c + 16 <= C; c += 16) act_store16(o + c, act_load16(pe + c));
    for (; c < C; ++c) act_store(o, c, act_load(pe, c));
  }
}

// dwpe (T*C) += sum over b of dout: 16 consecutive elements per work-item, b in order.
__kernel void embedding_backward_wpe(__global float* dwpe, __global const act_t* dout, const uint B, const uint T,
                                     const uint C) {
  const uint i0 = get_global_id(0) * 16, n = T * C;
  if (i0 >= n) return;
  if (i0 + 16 <= n) {
    float16 acc = (float16)(0.0f);
    for (uint b = 0; b < B; ++b) acc += act_load16(dout + (size_t)b * n + i0);
    vstore16(vload16(0, dwpe + i0) + acc, 0, dwpe + i0);
  } else {
    for (uint i = i0; i < n; ++i) {
      float acc = 0.0f;
      for (uint b = 0; b < B; ++b) acc += act_load(dout, (size_t)b * n + i);
      dwpe[i] += acc;
    }
  }
}

// One unique token per work-item: its row of dwte gets its positions' rows of dout, in order.
__kernel void embedding_backward_wte(__global float* dwte, __global const act_t* dout, __global const int* tokens,
                                     __global const int* starts, __global const int* positions, const uint U,
                                     const uint C) {
  const uint u = get_global_id(0);
  if (u >= U) return;
  __global float* row = dwte + (size_t)tokens[u] * C;
  for (int p = starts[u]; p < starts[u + 1]; ++p) {
    __global const act_t* d = dout + (size_t)positions[p] * C;
    uint c = 0;
    for (; c + 16 <= C; c += 16) vstore16(vload16(0, row + c) + act_load16(d + c), 0, row + c);
    for (; c < C; ++c) row[c] += act_load(d, c);
  }
}
