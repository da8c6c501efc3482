// SwiGLU's gate (LLaMA's feed-forward): gu (N, 2F) holds per row [gate (F) | up (F)], the fused
// projection's output;  h (N, F) = silu(gate) * up,  silu(g) = g sigmoid(g).
// sigmoid is evaluated from e = exp(-|g|) <= 1, so no intermediate overflows whatever g is
// (1 / (1 + exp(-g)) would take exp(-g) to inf for g <= -89 and lean on inf arithmetic):
//   sigmoid(g) = 1 / (1 + e) for g >= 0,  e / (1 + e) otherwise.
// Backward: dgate = dh * up * silu'(gate), silu'(g) = s (1 + g (1 - s)), s = sigmoid(g); dup = dh * silu(gate).
// One work-item per element of h (portable variant; swiglu_cpu.cl is the CPU twin). gu, h and
// their gradients are act_t (kernels_cl/dtype.cl); everything is computed in float.

inline float swiglu_sigmoid(const float g) {
  const float e = exp(-fabs(g));
  const float s = 1.0f / (1.0f + e);
  return g >= 0.0f ? s : e * s;
}

// h (N, F) from gu (N, 2F)
__kernel void swiglu_forward(__global act_t* h, __global const act_t* gu, const uint N, const uint F) {
  const uint i = get_global_id(0);
  if (i >= N * F) return;
  const size_t row = (size_t)(i / F) * 2 * F, f = i % F;
  const float g = act_load(gu, row + f);
  act_store(h, i, g * swiglu_sigmoid(g) * act_load(gu, row + F + f));
}

// dgu (N, 2F) from dh (N, F) and gu (N, 2F)
__kernel void swiglu_backward(__global act_t* dgu, __global const act_t* gu, __global const act_t* dh, const uint N,
                              const uint F) {
  const uint i = get_global_id(0);
  if (i >= N * F) return;
  const size_t row = (size_t)(i / F) * 2 * F, f = i % F;
  const float g = act_load(gu, row + f), u = act_load(gu, row + F + f), d = act_load(dh, i);
  const float s = swiglu_sigmoid(g);
  act_store(dgu, row + f, d * u * s * (1.0f + g * (1.0f - s)));
  act_store(dgu, row + F + f, d * g * s);
}
