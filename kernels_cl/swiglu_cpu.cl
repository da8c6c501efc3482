// CPU variant of swiglu.cl (PoCL): the same kernels and arguments, one row per work-item with
// float16 vectors along it; the overflow-free sigmoid and the types as in swiglu.cl.

inline float swiglu_sigmoid(const float g) {
  const float e = exp(-fabs(g));
  const float s = 1.0f / (1.0f + e);
  return g >= 0.0f ? s : e * s;
}
inline float16 swiglu_sigmoid16(const float16 g) {
  const float16 e = exp(-fabs(g));
  const float16 s = 1.0f / (1.0f + e);
  return select(e * s, s, isgreaterequal(g, (float16)(0.0f)));
}

__kernel void swiglu_forward(__global act_t* h, __global const act_t* gu, const uint N, const uint F) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global const act_t* gate = gu + (size_t)n * 2 * F;
  __global const act_t* up = gate + F;
  __global act_t* out = h + (size_t)n * F;
  uint f = 0;
  for (; f + 16 <= F; f += 16) {
    const float16 g = act_load16(gate + f);
    act_store16(out + f, g * swiglu_sigmoid16(g) * act_load16(up + f));
  }
  for (; f < F; ++f) {
    const float g = act_load(gate, f);
    act_store(out, f, g * swiglu_sigmoid(g) * act_load(up, f));
  }
}

__kernel void swiglu_backward(__global act_t* dgu, __global const act_t* gu, __global const act_t* dh, const uint N,
                              const uint F) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global const act_t* gate = gu + (size_t)n * 2 * F;
  __global const act_t* up = gate + F;
  __global const act_t* d = dh + (size_t)n * F;
  __global act_t* dgate = dgu + (size_t)n * 2 * F;
  __global act_t* dup = dgate + F;
  uint f = 0;
  for (; f + 16 <= F; f += 16) {
    const float16 g = act_load16(gate + f), dv = act_load16(d + f);
    const float16 s = swiglu_sigmoid16(g);
    act_store16(dgate + f, dv * act_load16(up + f) * s * (1.0f + g * (1.0f - s)));
    act_store16(dup + f, dv * g * s);
  }
  for (; f < F; ++f) {
    const float g = act_load(gate, f), dv = act_load(d, f);
    const float s = swiglu_sigmoid(g);
    act_store(dgate, f, dv * act_load(up, f) * s * (1.0f + g * (1.0f - s)));
    act_store(dup, f, dv * g * s);
  }
}
