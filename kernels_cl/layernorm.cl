// LayerNorm over the last dimension, statistics in fp32 (biased variance), as Pax's
// reductions_in_fp32 LayerNorm. One work-item per row.

// out = (x - mean) * rstd * w + b        x, out: (N, C)   mean, rstd: (N)
__kernel void layernorm_forward(__global float* out, __global float* mean_out, __global float* rstd_out,
                                __global const float* x, __global const float* w, __global const float* b,
                                const uint N, const uint C, const float eps) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global const float* row = x + (size_t)n * C;
  float sum = 0.0f;
  for (uint c = 0; c < C; ++c) sum += row[c];
  const float mean = sum / C;
  float var = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float d = row[c] - mean;
    var += d * d;
  }
  const float rstd = rsqrt(var / C + eps);
  __global float* o = out + (size_t)n * C;
  for (uint c = 0; c < C; ++c) o[c] = (row[c] - mean) * rstd * w[c] + b[c];
  mean_out[n] = mean;
  rstd_out[n] = rstd;
}

// dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * w.   dx: (N, C)
__kernel void layernorm_backward_dx(__global float* dx, __global const float* dout, __global const float* x,
                                    __global const float* w, __global const float* mean,
                                    __global const float* rstd, const uint N, const uint C) {
  const uint n = get_global_id(0);
  if (n >= N) return;
  __global const float* xr = x + (size_t)n * C;
  __global const float* dr = dout + (size_t)n * C;
  const float mu = mean[n], rs = rstd[n];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (uint c = 0; c < C; ++c) {
    const float dnorm = dr[c] * w[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (xr[c] - mu) * rs;
  }
  dnorm_mean /= C;
  dnorm_norm_mean /= C;
  __global float* o = dx + (size_t)n * C;
  for (uint c = 0; c < C; ++c) {
    const float norm = (xr[c] - mu) * rs;
    o[c] = (dr[c] * w[c] - dnorm_mean - norm * dnorm_norm_mean) * rs;
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
