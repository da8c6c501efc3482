// The residual add of the transformer block on act_t activations (kernels_cl/dtype.cl), summed in
// float and rounded once.
// out[i] = a[i] + b[i]                                             a, b, out: (n)
__kernel void residual_add(__global act_t* out, __global const act_t* a, __global const act_t* b, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) act_store(out, i, act_load(a, i) + act_load(b, i));
}
