// The S4D state-space layer's FFT convolution around clFFT's transforms (kernels_cl/ssm_kernels.cpp:
// pack, real FFTs of length n >= 2T, pointwise spectrum products, inverse FFTs, unpack); ssm.cl
// has the layer's other kernels and the formulas. One program for every device class: these move
// data between layouts and the FFTs dominate, so there is no CPU or GPU twin.
// Shapes: u, y, dy, du (B*T, C) rows b-major, act_t; K, dK (T, C) float; time (B*C, n) reals;
// spectra (B*C, F) complex, F = n/2 + 1.

// FFT input: time[b*C + c, t] = x[b, t, c] for t < T, 0 for T <= t < n (the zero padding that makes
// the FFT's circular convolution a linear one). One work-item per time element, t fastest.
__kernel void ssm_pack(__global float* time, __global const act_t* x, const uint B, const uint T, const uint C,
                       const uint n) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)B * C * n) return;
  const uint t = i % n;
  const size_t bc = i / n;
  const uint b = bc / C, c = bc % C;
  time[i] = t < T ? act_load(x, ((size_t)b * T + t) * C + c) : 0.0f;
}

// The same for the float kernel K (T, C) -> time (C, n).
__kernel void ssm_pack_kernel(__global float* time, __global const float* K, const uint T, const uint C,
                              const uint n) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)C * n) return;
  const uint t = i % n, c = i / n;
  time[i] = t < T ? K[(size_t)t * C + c] : 0.0f;
}

// FFT output back to rows, plus the skip term: y[b, t, c] = time[b*C + c, t] + d[c] skip[b, t, c].
// One work-item per (b, t, c).
__kernel void ssm_unpack(__global act_t* y, __global const float* time, __global const act_t* skip,
                         __global const float* d, const uint B, const uint T, const uint C, const uint n) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)B * T * C) return;
  const uint c = i % C;
  const size_t row = i / C;
  const uint t = row % T, b = row / T;
  act_store(y, i, time[((size_t)b * C + c) * n + t] + d[c] * act_load(skip, i));
}

// dK (T, C) = time (C, n)[:, :T] transposed. One work-item per (t, c).
__kernel void ssm_unpack_kernel(__global float* dK, __global const float* time, const uint T, const uint C,
                                const uint n) {
  const uint i = get_global_id(0);
  if (i >= T * C) return;
  const uint t = i / C, c = i % C;
  dK[i] = time[(size_t)c * n + t];
}

// In place on the spectra x (B*C, F): x[b*C + c, f] *= k[c, f], or by conj(k[c, f]) when `conjugate`
// (a correlation with k instead of a convolution). One work-item per bin.
__kernel void ssm_spectrum_product(__global float2* x, __global const float2* k, const uint rows, const uint C,
                                   const uint F, const uint conjugate) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)rows * F) return;
  const uint f = i % F;
  const uint c = (i / F) % C;
  const float2 a = x[i];
  float2 w = k[(size_t)c * F + f];
  if (conjugate) w.y = -w.y;
  x[i] = (float2)(a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x);
}

// The kernel gradient's spectrum, summed over the batch so only C inverse FFTs remain:
// dk[c, f] = sum_b conj(u[b*C + c, f]) dy[b*C + c, f]. One work-item per (c, f).
__kernel void ssm_spectrum_correlate(__global float2* dk, __global const float2* u, __global const float2* dy,
                                     const uint B, const uint C, const uint F) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)C * F) return;
  float2 acc = (float2)(0.0f, 0.0f);
  for (uint b = 0; b < B; ++b) {
    const float2 a = u[(size_t)b * C * F + i], g = dy[(size_t)b * C * F + i];
    acc += (float2)(a.x * g.x + a.y * g.y, a.x * g.y - a.y * g.x);
  }
  dk[i] = acc;
}
