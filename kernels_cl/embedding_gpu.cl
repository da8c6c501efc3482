// Token + position embedding, GPU twin of embedding.cl (same kernels and argument lists; see there
// for the layouts): a work-item owns 4 consecutive elements of the output, read and written with
// vector loads and stores where a four cannot straddle a row (C a multiple of 4; the wpe gradient,
// contiguous, only needs a whole four), element by element otherwise. Each sum keeps
// embedding.cl's order, so both sets give the same bits.

// out[bt, c] = wte[ids[bt] - vocab_begin, c] + wpe[t, c]      n = B*T*C elements, n / 4 items (rounded up)
PAX_GPU_KERNEL void embedding_forward(__global act_t* out, __global const int* ids, __global const act_t* wte,
                                      __global const act_t* wpe, const uint T, const uint C, const uint n,
                                      const uint pos0, const uint wpe_row_stride, const uint vocab_begin,
                                      const uint vocab_rows) {
  const uint i = get_global_id(0) * 4;
  if (i >= n) return;
  if (C % 4 == 0) {  // n = B*T*C, so the four lie in row bt
    const uint bt = i / C, c = i - bt * C;
    const uint row = (uint)ids[bt] - vocab_begin;
    const float4 token = row < vocab_rows ? act_load4(wte, (size_t)row * C + c) : (float4)(0.0f);
    act_store4(out, i, token + act_load4(wpe, (size_t)(bt % T + pos0) * wpe_row_stride + c));
    return;
  }
  for (uint j = i; j < min(i + 4, n); ++j) {
    const uint bt = j / C, c = j - bt * C;
    const uint row = (uint)ids[bt] - vocab_begin;
    const float token = row < vocab_rows ? act_load(wte, (size_t)row * C + c) : 0.0f;
    act_store(out, j, token + act_load(wpe, (size_t)(bt % T + pos0) * wpe_row_stride + c));
  }
}

// dwpe[t, c] += sum_b dout[b, t, c], summed in order of b.   dwpe: (T, C), T*C / 4 items (rounded up)
PAX_GPU_KERNEL void embedding_backward_wpe(__global float* dwpe, __global const act_t* dout, const uint B, const uint T,
                                           const uint C) {
  const uint i = get_global_id(0) * 4, n = T * C;
  if (i + 4 <= n) {
    float4 acc = (float4)(0.0f);
    for (uint b = 0; b < B; ++b) acc += act_load4(dout, (size_t)b * n + i);
    vstore4(vload4(0, dwpe + i) + acc, 0, dwpe + i);
    return;
  }
  for (uint j = i; j < n; ++j) {
    float acc = 0.0f;
    for (uint b = 0; b < B; ++b) acc += act_load(dout, (size_t)b * n + j);
    dwpe[j] += acc;
  }
}

// dwte[tokens[u], c] += sum of dout[positions[p], c] for p in [starts[u], starts[u+1]), in order of p
// (one writer per row, no atomics).   U*C / 4 items (rounded up)
PAX_GPU_KERNEL void embedding_backward_wte(__global float* dwte, __global const act_t* dout, __global const int* tokens,
                                           __global const int* starts, __global const int* positions, const uint U,
                                           const uint C) {
  const uint i = get_global_id(0) * 4, n = U * C;
  if (i >= n) return;
  if (C % 4 == 0) {
    const uint u = i / C, c = i - u * C;
    float4 acc = (float4)(0.0f);
    for (int p = starts[u]; p < starts[u + 1]; ++p) acc += act_load4(dout, (size_t)positions[p] * C + c);
    __global float* row = dwte + (size_t)tokens[u] * C + c;
    vstore4(vload4(0, row) + acc, 0, row);
    return;
  }
  for (uint j = i; j < min(i + 4, n); ++j) {
    const uint u = j / C, c = j - u * C;
    float acc = 0.0f;
    for (int p = starts[u]; p < starts[u + 1]; ++p) acc += act_load(dout, (size_t)positions[p] * C + c);
    dwte[(size_t)tokens[u] * C + c] += acc;
  }
}
