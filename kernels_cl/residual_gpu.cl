// The residual add, GPU twin of residual.cl: 4 consecutive elements per work-item, summed in float
// and rounded once; a scalar tail past the last whole four.   a, b, out: (n)
PAX_GPU_KERNEL void residual_add(__global act_t* out, __global const act_t* a, __global const act_t* b, const uint n) {
  const uint i = get_global_id(0) * 4;
  if (i + 4 <= n) {
    act_store4(out, i, act_load4(a, i) + act_load4(b, i));
    return;
  }
  for (uint j = i; j < n; ++j) act_store(out, j, act_load(a, j) + act_load(b, j));
}
