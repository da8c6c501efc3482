// The S4D state-space layer's kernels (models/layers/ssm.h; praxis/layers/ssm.py SSM). Per channel c
// and state n, with W = (exp(dt A) - 1) / A and z = exp(dt A) (zero-order hold, B = 1):
//   K[l, c] = Re sum_n C[n, c] W z^l                      the convolution kernel, l < T
//   y[b, t, c] = sum_{j <= t} K[j, c] u[b, t - j, c] + D[c] u[b, t, c]
// The layer computes powers[l, n] = W z^l once on the host in double (exp(l dt A) directly, not by
// repeated products), so K and dC are sums over a table. The convolution runs direct (the kernels
// below: one work-item per output, O(T) each) or through clFFT (ssm_fft.cl and
// kernels_cl/ssm_kernels.cpp). ssm_cpu.cl is the CPU twin: the same sums, 16 channels a work-item.
// Activations (u, y, dy, du) are act_t (kernels_cl/dtype.cl); K, C, D, gradients and the decode
// state are float; every sum is a float one, in a fixed order.
// Shapes: u, y, dy, du (B*T, C) rows b-major; K, dK (T, C); powers (>= T, N) complex; c_re, c_im,
// dc_re, dc_im (N, C); d, dd (C); steps (N) as (Re z, Im z, Re W, Im W); state (B, N, C) complex.

// K (T, C) = sum_n c_re[n, c] Re powers[l, n] - c_im[n, c] Im powers[l, n]. One work-item per (l, c).
__kernel void ssm_kernel(__global float* K, __global const float2* powers, __global const float* c_re,
                         __global const float* c_im, const uint T, const uint C, const uint N) {
  const uint i = get_global_id(0);
  if (i >= T * C) return;
  const uint l = i / C, c = i % C;
  float acc = 0.0f;
  for (uint n = 0; n < N; ++n) {
    const float2 p = powers[(size_t)l * N + n];
    acc += c_re[(size_t)n * C + c] * p.x - c_im[(size_t)n * C + c] * p.y;
  }
  K[i] = acc;
}

// dc_re[n, c] += sum_l dK[l, c] Re powers[l, n];  dc_im[n, c] += -sum_l dK[l, c] Im powers[l, n].
// One work-item per (n, c).
__kernel void ssm_kernel_grad(__global float* dc_re, __global float* dc_im, __global const float* dK,
                              __global const float2* powers, const uint T, const uint C, const uint N) {
  const uint i = get_global_id(0);
  if (i >= N * C) return;
  const uint n = i / C, c = i % C;
  float re = 0.0f, im = 0.0f;
  for (uint l = 0; l < T; ++l) {
    const float2 p = powers[(size_t)l * N + n];
    const float g = dK[(size_t)l * C + c];
    re += g * p.x;
    im -= g * p.y;
  }
  dc_re[i] += re;
  dc_im[i] += im;
}

// Direct causal convolution: y[b, t, c] = sum_{j <= t} K[j, c] u[b, t - j, c] + d[c] u[b, t, c].
// One work-item per (b, t, c), c fastest.
__kernel void ssm_conv_forward(__global act_t* y, __global const act_t* u, __global const float* K,
                               __global const float* d, const uint B, const uint T, const uint C) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)B * T * C) return;
  const uint c = i % C;
  const size_t row = i / C;
  const uint t = row % T;
  const size_t first = (row - t) * C + c;  // (b, 0, c)
  float acc = 0.0f;
  for (uint j = 0; j <= t; ++j) acc += K[(size_t)j * C + c] * act_load(u, first + (size_t)(t - j) * C);
  act_store(y, i, acc + d[c] * act_load(u, i));
}

// Its input gradient, a correlation: du[b, l, c] = sum_{j >= l} K[j - l, c] dy[b, j, c] + d[c] dy[b, l, c].
__kernel void ssm_conv_backward_input(__global act_t* du, __global const act_t* dy, __global const float* K,
                                      __global const float* d, const uint B, const uint T, const uint C) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)B * T * C) return;
  const uint c = i % C;
  const size_t row = i / C;
  const uint l = row % T;
  const size_t first = (row - l) * C + c;
  float acc = 0.0f;
  for (uint j = l; j < T; ++j) acc += K[(size_t)(j - l) * C + c] * act_load(dy, first + (size_t)j * C);
  act_store(du, i, acc + d[c] * act_load(dy, i));
}

// The kernel's gradient (overwritten): dK[j, c] = sum_b sum_{l >= j} dy[b, l, c] u[b, l - j, c].
// One work-item per (j, c).
__kernel void ssm_conv_backward_kernel(__global float* dK, __global const act_t* dy, __global const act_t* u,
                                       const uint B, const uint T, const uint C) {
  const uint i = get_global_id(0);
  if (i >= T * C) return;
  const uint j = i / C, c = i % C;
  float acc = 0.0f;
  for (uint b = 0; b < B; ++b) {
    const size_t first = (size_t)b * T * C + c;
    for (uint l = j; l < T; ++l) acc += act_load(dy, first + (size_t)l * C) * act_load(u, first + (size_t)(l - j) * C);
  }
  dK[i] = acc;
}

// The skip term's gradient: dd[c] += sum over the rows of dy[r, c] u[r, c]. One work-item per c.
__kernel void ssm_skip_grad(__global float* dd, __global const act_t* dy, __global const act_t* u, const uint rows,
                            const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  float acc = 0.0f;
  for (uint r = 0; r < rows; ++r) acc += act_load(dy, (size_t)r * C + c) * act_load(u, (size_t)r * C + c);
  dd[c] += acc;
}

// Decoding, the recurrent form over T new tokens per sequence from the state x (B, N, C) (zero
// first when `reset`): x_t = z x_{t-1} + W u_t,  y_t = Re sum_n C[n, c] x_t[n] + d[c] u_t.
// One work-item per (b, c), the tokens in order.
__kernel void ssm_decode(__global act_t* y, __global float2* state, __global const act_t* u,
                         __global const float* c_re, __global const float* c_im, __global const float* d,
                         __global const float4* steps, const uint B, const uint T, const uint C, const uint N,
                         const uint reset) {
  const uint i = get_global_id(0);
  if (i >= B * C) return;
  const uint b = i / C, c = i % C;
  for (uint t = 0; t < T; ++t) {
    const size_t at = ((size_t)b * T + t) * C + c;
    const float v = act_load(u, at);
    float acc = d[c] * v;
    for (uint n = 0; n < N; ++n) {
      const float4 s = steps[n];
      const size_t xi = ((size_t)b * N + n) * C + c;
      const float2 x = (reset && t == 0) ? (float2)(0.0f, 0.0f) : state[xi];
      const float2 next = (float2)(s.x * x.x - s.y * x.y + s.z * v, s.x * x.y + s.y * x.x + s.w * v);
      state[xi] = next;
      acc += c_re[(size_t)n * C + c] * next.x - c_im[(size_t)n * C + c] * next.y;
    }
    act_store(y, at, acc);
  }
}
