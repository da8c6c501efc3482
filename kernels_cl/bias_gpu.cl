// Bias of a linear layer, GPU twin of bias.cl (group_reduce.cl prepended). bias_add: one element
// per work-item, coalesced. bias_grad: stage 1 of the two-stage column reduction (as
// layernorm_gpu.cl's parameter gradients): row-block partials (blocks, C), rows in order; the
// launcher then runs pax_add_block_sums into dbias.

// out[n, c] += bias[c]                              out: (N, C)
PAX_GPU_KERNEL void bias_add(__global act_t* out, __global const act_t* bias, const uint N, const uint C) {
  const uint i = get_global_id(0);
  if (i < N * C) act_store(out, i, act_load(out, i) + act_load(bias, i % C));
}

// partials[block, c] = sum over the block's rows of dout[n, c]     dout: (N, C)
PAX_GPU_KERNEL void bias_grad(__global float* partials, __global const act_t* dout, const uint N, const uint C,
                              const uint rows_per_block) {
  const uint block = get_group_id(1), c = get_global_id(0);
  if (c >= C) return;
  const uint end = min(N, (block + 1) * rows_per_block);
  float acc = 0.0f;
  PAX_LOADS_IN_FLIGHT
  for (uint n = block * rows_per_block; n < end; ++n) acc += act_load(dout, (size_t)n * C + c);
  partials[(size_t)block * C + c] = acc;
}
