// SwiGLU's gate, GPU twin of swiglu.cl (same formulas and arguments): 2-D groups, row n =
// group id 1, and 4 consecutive columns f per work-item along dimension 0 (act_load4 /
// act_store4), a scalar tail past the last whole four of a row.   gu (N, 2F) = [gate | up], h (N, F)

// sigmoid from e = exp(-|g|) <= 1 (no overflow for any g; see swiglu.cl), 4 lanes at once.
inline float4 swiglu_sigmoid4(const float4 g) {
  const float4 e = exp(-fabs(g));
  const float4 s = 1.0f / (1.0f + e);
  return select(e * s, s, g >= (float4)(0.0f));  // a vector comparison: -1 where true
}

PAX_GPU_KERNEL void swiglu_forward(__global act_t* h, __global const act_t* gu, const uint N, const uint F) {
  const uint n = get_group_id(1), f = get_global_id(0) * 4;
  if (n >= N || f >= F) return;
  const size_t row = (size_t)n * 2 * F, out = (size_t)n * F;
  if (f + 4 <= F) {
    const float4 g = act_load4(gu, row + f);
    act_store4(h, out + f, g * swiglu_sigmoid4(g) * act_load4(gu, row + F + f));
    return;
  }
  for (uint j = f; j < F; ++j) {
    const float g = act_load(gu, row + j);
    act_store(h, out + j, g * swiglu_sigmoid4((float4)(g)).x * act_load(gu, row + F + j));
  }
}

// dgu (N, 2F) from dh (N, F): dgate = dh * up * s (1 + g (1 - s)), dup = dh * g * s.
PAX_GPU_KERNEL void swiglu_backward(__global act_t* dgu, __global const act_t* gu, __global const act_t* dh,
                                    const uint N, const uint F) {
  const uint n = get_group_id(1), f = get_global_id(0) * 4;
  if (n >= N || f >= F) return;
  const size_t row = (size_t)n * 2 * F, grad = (size_t)n * F;
  if (f + 4 <= F) {
    const float4 g = act_load4(gu, row + f), u = act_load4(gu, row + F + f), d = act_load4(dh, grad + f);
    const float4 s = swiglu_sigmoid4(g);
    act_store4(dgu, row + f, d * u * s * (1.0f + g * (1.0f - s)));
    act_store4(dgu, row + F + f, d * g * s);
    return;
  }
  for (uint j = f; j < F; ++j) {
    const float g = act_load(gu, row + j), u = act_load(gu, row + F + j), d = act_load(dh, grad + j);
    const float s = swiglu_sigmoid4((float4)(g)).x;
    act_store(dgu, row + j, d * u * s * (1.0f + g * (1.0f - s)));
    act_store(dgu, row + F + j, d * g * s);
  }
}
