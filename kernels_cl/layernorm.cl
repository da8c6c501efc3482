// LayerNorm over the last dimension, statistics in fp32 (biased variance), as Pax's
// reductions_in_fp32 LayerNorm. One work-item per row (portable variant; layernorm_cpu.cl is
// the CPU twin). Residual fusion: the forward can first form v = x + delta (written to sum_out)
// and normalise v; the backward can add an incoming residual gradient to dx.
// Activations and the weights as read (w, b: the step's copy) are act_t (kernels_cl/dtype.cl);
// mean, rstd and the parameter gradients are float, and every sum is a float one. The forward
// normalises the sum as stored (read back), so the backward sees the very input it normalised.

// out = (v - mean) * rstd * w + b, v = x (+ delta)     x, delta, sum_out, out: (N, C)   mean, rstd: (N)
__kernel void layernorm_forward(__global act_t* out, __global float* mean_out, __global float* rstd_out,
                                __global act_t* sum_out, __global const act_t* x, __global const act_t* delta,
                                __global const act_t* w, __global const act_t* b, const uint N, const uint C,
                                const float eps, const uint has_delta) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  __global const act_t* row = x + at;
  if (has_delta) {
    for (uint c = 0; c < C; ++c) act_store(sum_out, at + c, act_load(row, c) + act_load(delta, at + c));
    row = sum_out + at;
  }
  float sum = 0.0f;
  for (uint c = 0; c < C; ++c) sum += act_load(row, c);
  const float mean = sum / C;
  float var = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float d = act_load(row, c) - mean;
    var += d * d;
  }
  const float rstd = rsqrt(var / C + eps);
  for (uint c = 0; c < C; ++c) {
    act_store(out, at + c, (act_load(row, c) - mean) * rstd * act_load(w, c) + act_load(b, c));
  }
  mean_out[n] = mean;
  rstd_out[n] = rstd;
}

// dx = (dresid +) rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * w.
__kernel void layernorm_backward_dx(__global act_t* dx, __global const act_t* dout, __global const act_t* x,
                                    __global const act_t* w, __global const float* mean,
                                    __global const float* rstd, __global const act_t* dresid, const uint N,
                                    const uint C, const uint has_resid) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  const float mu = mean[n], rs = rstd[n];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float dnorm = act_load(dout, at + c) * act_load(w, c);
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (act_load(x, at + c) - mu) * rs;
  }
  dnorm_mean /= C;
  dnorm_norm_mean /= C;
  for (uint c = 0; c < C; ++c) {
    const float norm = (act_load(x, at + c) - mu) * rs;
    const float g = (act_load(dout, at + c) * act_load(w, c) - dnorm_mean - norm * dnorm_norm_mean) * rs;
    act_store(dx, at + c, has_resid ? act_load(dresid, at + c) + g : g);
  }
}

// dw[c] += sum_n dout[n,c] * norm[n,c];  db[c] += sum_n dout[n,c]. One work-item per column,
// rows summed in order (deterministic).
__kernel void layernorm_backward_params(__global float* dw, __global float* db, __global const act_t* dout,
                                        __global const act_t* x, __global const float* mean,
                                        __global const float* rstd, const uint N, const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  float acc_w = 0.0f, acc_b = 0.0f;
  for (uint n = 0; n < N; ++n) {
    const float d = act_load(dout, (size_t)n * C + c);
    acc_w += d * (act_load(x, (size_t)n * C + c) - mean[n]) * rstd[n];
    acc_b += d;
  }
  dw[c] += acc_w;
  db[c] += acc_b;
}
