// RMSNorm over the last dimension (LLaMA; praxis RmsNorm), statistics in fp32:
//   out = v * rstd * w,  rstd = 1 / sqrt(mean_c(v^2) + eps),  v = x (+ delta).
// One work-item per row (portable variant; rmsnorm_cpu.cl is the CPU twin). Residual fusion as in
// layernorm.cl: the forward can first form v = x + delta (written to sum_out) and normalise the sum
// as stored (read back), so the backward sees the very input it normalised; the backward can add
// an incoming residual gradient to dx. Activations and the weight as read (w: the step's copy) are
// act_t (kernels_cl/dtype.cl); rstd and the weight gradient are float, and every sum is a float one.

// x, delta, sum_out, out: (N, C)   w: (C)   rstd_out: (N)
__kernel void rmsnorm_forward(__global act_t* out, __global float* rstd_out, __global act_t* sum_out,
                              __global const act_t* x, __global const act_t* delta, __global const act_t* w,
                              const uint N, const uint C, const float eps, const uint has_delta) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  __global const act_t* row = x + at;
  if (has_delta) {
    for (uint c = 0; c < C; ++c) act_store(sum_out, at + c, act_load(row, c) + act_load(delta, at + c));
    row = sum_out + at;
  }
  float sum_sq = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float v = act_load(row, c);
    sum_sq += v * v;
  }
  const float rstd = rsqrt(sum_sq / C + eps);
  for (uint c = 0; c < C; ++c) act_store(out, at + c, act_load(row, c) * rstd * act_load(w, c));
  rstd_out[n] = rstd;
}

// dx = (dresid +) rstd * (g - xhat * mean_c(g * xhat)),  g = dout * w,  xhat = x * rstd.
__kernel void rmsnorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                  __global const act_t* w, __global const float* rstd, __global const act_t* dresid,
                                  const uint N, const uint C, const uint has_resid) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  const float rs = rstd[n];
  float g_xhat_mean = 0.0f;
  for (uint c = 0; c < C; ++c) g_xhat_mean += act_load(dout, at + c) * act_load(w, c) * act_load(x, at + c) * rs;
  g_xhat_mean /= C;
  for (uint c = 0; c < C; ++c) {
    const float xhat = act_load(x, at + c) * rs;
    const float d = (act_load(dout, at + c) * act_load(w, c) - xhat * g_xhat_mean) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + d : d);
  }
}

// dw[c] += sum_n dout[n,c] * x[n,c] * rstd[n]. One work-item per column, rows summed in order
// (deterministic: no atomics, as layernorm_backward_params).
__kernel void rmsnorm_backward_scale(__global float* dw, __global const act_t* dout, __global const act_t* x,
                                     __global const float* rstd, const uint N, const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  float acc = 0.0f;
  for (uint n = 0; n < N; ++n) acc += act_load(dout, (size_t)n * C + c) * act_load(x, (size_t)n * C + c) * rstd[n];
  dw[c] += acc;
}
