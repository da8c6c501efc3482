// LayerNorm over the last dimension, statistics in fp32 (biased variance), as Pax's
// reductions_in_fp32 LayerNorm. One work-item per row (portable variant; layernorm_cpu.cl is
// the CPU twin). Residual fusion: the forward can first form v = x + delta (written to sum_out)
// and normalise v; the backward can add an incoming residual gradient to dx.

// out = (v - mean) * rstd * w + b, v = x (+ delta)     x, delta, sum_out, out: (N, C)   mean, rstd: (N)
__kernel void layernorm_forward(__global float* out, __global float* mean_out, __global float* rstd_out,
                                __global float* sum_out, __global const float* x, __global const float* delta,
                                __global const float* w, __global const float* b, const uint N, const uint C,
                                const float eps, const uint has_delta) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  __global const float* row = x + at;
  if (has_delta) {
    for (uint c = 0; c < C; ++c) sum_out[at + c] = row[c] + delta[at + c];
    row = sum_out + at;
  }
  float sum = 0.0f;
  for (uint c = 0; c < C; ++c) sum += row[c];
  const float mean = sum / C;
  float var = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float d = row[c] - mean;
    var += d * d;
  }
  const float rstd = rsqrt(var / C + eps);
  for (uint c = 0; c < C; ++c) out[at + c] = (row[c] - mean) * rstd * w[c] + b[c];
  mean_out[n] = mean;
  rstd_out[n] = rstd;
}

// dx = (dresid +) rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * w.
__kernel void layernorm_backward_dx(__global float* dx, __global const float* dout, __global const float* x,
                                    __global const float* w, __global const float* mean,
                                    __global const float* rstd, __global const float* dresid, const uint N,
                                    const uint C, const uint has_resid) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  const size_t at = (size_t)n * C;
  const float mu = mean[n], rs = rstd[n];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float dnorm = dout[at + c] * w[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (x[at + c] - mu) * rs;
  }
  dnorm_mean /= C;
  dnorm_norm_mean /= C;
  for (uint c = 0; c < C; ++c) {
    const float norm = (x[at + c] - mu) * rs;
    const float g = (dout[at + c] * w[c] - dnorm_mean - norm * dnorm_norm_mean) * rs;
    dx[at + c] = has_resid ? dresid[at + c] + g : g;
  }
}

// dw[c] += sum_n dout[n,c] * norm[n,c];  db[c] += sum_n dout[n,c]. One work-item per column,
// rows summed in order (deterministic).
__kernel void layernorm_backward_params(__global float* dw, __global float* db, __global const float* dout,
                                        __global const float* x, __global const float* mean,
                                        __global const float* rstd, const uint N, const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  float acc_w = 0.0f, acc_b = 0.0f;
  for (uint n = 0; n < N; ++n) {
    const float d = dout[(size_t)n * C + c];
    acc_w += d * (x[(size_t)n * C + c] - mean[n]) * rstd[n];
    acc_b += d;
  }
  dw[c] += acc_w;
  db[c] += acc_b;
}
