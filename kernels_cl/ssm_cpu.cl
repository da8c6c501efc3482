// The CPU twin of ssm.cl: the same kernels, arguments and formulas (see there), each channel's sum in
// the same order, but 16 consecutive channels per work-item as float16 vectors. Every tensor here
// is channel-fastest, so each load and store is one contiguous vector; the portable kernels' loops
// over j, l or n per work-item left PoCL's work-group vectorizer nothing it could use (the direct
// convolution and its gradients ran about 10x slower at T = 128). A last block of fewer than 16
// channels (C % 16) runs the same code with its lanes loaded and stored one by one.
// Work-items: rows x ceil(C / 16), the channel block fastest (SsmKernels::channel_items).

#define SSM_LANES 16

// The work-item's row and channel block [c0, c0 + lanes) over `rows` rows of C channels; false past the end.
inline bool ssm_block(const uint rows, const uint C, size_t* row, uint* c0, uint* lanes) {
  const size_t i = get_global_id(0);
  const uint blocks = (C + SSM_LANES - 1) / SSM_LANES;
  if (i >= (size_t)rows * blocks) return false;
  *row = i / blocks;
  *c0 = (uint)(i % blocks) * SSM_LANES;
  *lanes = min((uint)SSM_LANES, C - *c0);
  return true;
}

// `lanes` consecutive floats at p (the lanes beyond read as 0), and back.
inline float16 ssm_load(__global const float* p, const uint lanes) {
  if (lanes == SSM_LANES) return vload16(0, p);
  float16 v = (float16)(0.0f);
  float* a = (float*)&v;
  for (uint k = 0; k < lanes; ++k) a[k] = p[k];
  return v;
}
inline void ssm_store(__global float* p, const float16 v, const uint lanes) {
  if (lanes == SSM_LANES) {
    vstore16(v, 0, p);
    return;
  }
  const float* a = (const float*)&v;
  for (uint k = 0; k < lanes; ++k) p[k] = a[k];
}
inline float16 ssm_act_load(__global const act_t* p, const uint lanes) {
  if (lanes == SSM_LANES) return act_load16(p);
  float16 v = (float16)(0.0f);
  float* a = (float*)&v;
  for (uint k = 0; k < lanes; ++k) a[k] = act_load(p, k);
  return v;
}
inline void ssm_act_store(__global act_t* p, const float16 v, const uint lanes) {
  if (lanes == SSM_LANES) {
    act_store16(p, v);
    return;
  }
  const float* a = (const float*)&v;
  for (uint k = 0; k < lanes; ++k) act_store(p, k, a[k]);
}
// `lanes` consecutive complex numbers (re, im pairs) at p, split into their parts, and back.
inline void ssm_load_complex(__global const float2* p, const uint lanes, float16* re, float16* im) {
  if (lanes == SSM_LANES) {
    const float16 lo = vload16(0, (__global const float*)p), hi = vload16(1, (__global const float*)p);
    *re = (float16)(lo.even, hi.even);
    *im = (float16)(lo.odd, hi.odd);
    return;
  }
  *re = *im = (float16)(0.0f);
  float* r = (float*)re;
  float* m = (float*)im;
  for (uint k = 0; k < lanes; ++k) r[k] = p[k].x, m[k] = p[k].y;
}
inline void ssm_store_complex(__global float2* p, const float16 re, const float16 im, const uint lanes) {
  if (lanes == SSM_LANES) {
    vstore16(shuffle2(re, im, (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)), 0, (__global float*)p);
    vstore16(shuffle2(re, im, (uint16)(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)), 1,
             (__global float*)p);
    return;
  }
  const float* r = (const float*)&re;
  const float* m = (const float*)&im;
  for (uint k = 0; k < lanes; ++k) p[k] = (float2)(r[k], m[k]);
}

// Rows l < T.
__kernel void ssm_kernel(__global float* K, __global const float2* powers, __global const float* c_re,
                         __global const float* c_im, const uint T, const uint C, const uint N) {
  size_t l;
  uint c0, lanes;
  if (!ssm_block(T, C, &l, &c0, &lanes)) return;
  float16 acc = (float16)(0.0f);
  for (uint n = 0; n < N; ++n) {
    const float2 p = powers[l * N + n];
    acc += ssm_load(c_re + (size_t)n * C + c0, lanes) * p.x - ssm_load(c_im + (size_t)n * C + c0, lanes) * p.y;
  }
  ssm_store(K + l * C + c0, acc, lanes);
}

// Rows n < N.
__kernel void ssm_kernel_grad(__global float* dc_re, __global float* dc_im, __global const float* dK,
                              __global const float2* powers, const uint T, const uint C, const uint N) {
  size_t n;
  uint c0, lanes;
  if (!ssm_block(N, C, &n, &c0, &lanes)) return;
  float16 re = (float16)(0.0f), im = (float16)(0.0f);
  for (uint l = 0; l < T; ++l) {
    const float2 p = powers[(size_t)l * N + n];
    const float16 g = ssm_load(dK + (size_t)l * C + c0, lanes);
    re += g * p.x;
    im -= g * p.y;
  }
  const size_t at = n * C + c0;
  ssm_store(dc_re + at, ssm_load(dc_re + at, lanes) + re, lanes);
  ssm_store(dc_im + at, ssm_load(dc_im + at, lanes) + im, lanes);
}

// out[b, t] = sum_k K[k] x[b, t + step k] + d x[b, t] over a work-item's channel block, in k's order:
// the causal convolution (step -1: k <= t) and its correlation, the input gradient (step +1:
// t + k < T). Rows (b, t) of B*T.
inline void ssm_lagged_sum(__global act_t* out, __global const act_t* x, __global const float* K,
                           __global const float* d, const uint B, const uint T, const uint C, const int step) {
  size_t row;
  uint c0, lanes;
  if (!ssm_block(B * T, C, &row, &c0, &lanes)) return;
  const uint t = row % T, count = step < 0 ? t + 1 : T - t;
  const size_t first = (row - t) * C + c0;  // (b, 0, c0)
  float16 acc = (float16)(0.0f);
  for (uint k = 0; k < count; ++k) {
    const size_t lagged = first + (size_t)((int)t + step * (int)k) * C;
    acc += ssm_load(K + (size_t)k * C + c0, lanes) * ssm_act_load(x + lagged, lanes);
  }
  const size_t at = row * C + c0;
  ssm_act_store(out + at, acc + ssm_load(d + c0, lanes) * ssm_act_load(x + at, lanes), lanes);
}

__kernel void ssm_conv_forward(__global act_t* y, __global const act_t* u, __global const float* K,
                               __global const float* d, const uint B, const uint T, const uint C) {
  ssm_lagged_sum(y, u, K, d, B, T, C, -1);
}

__kernel void ssm_conv_backward_input(__global act_t* du, __global const act_t* dy, __global const float* K,
                                      __global const float* d, const uint B, const uint T, const uint C) {
  ssm_lagged_sum(du, dy, K, d, B, T, C, 1);
}

// Rows j < T.
__kernel void ssm_conv_backward_kernel(__global float* dK, __global const act_t* dy, __global const act_t* u,
                                       const uint B, const uint T, const uint C) {
  size_t j;
  uint c0, lanes;
  if (!ssm_block(T, C, &j, &c0, &lanes)) return;
  float16 acc = (float16)(0.0f);
  for (uint b = 0; b < B; ++b) {
    const size_t first = (size_t)b * T * C + c0;
    for (uint l = j; l < T; ++l) {
      acc += ssm_act_load(dy + first + (size_t)l * C, lanes) * ssm_act_load(u + first + (size_t)(l - j) * C, lanes);
    }
  }
  ssm_store(dK + j * C + c0, acc, lanes);
}

// One row of channel blocks.
__kernel void ssm_skip_grad(__global float* dd, __global const act_t* dy, __global const act_t* u, const uint rows,
                            const uint C) {
  size_t block_row;
  uint c0, lanes;
  if (!ssm_block(1, C, &block_row, &c0, &lanes)) return;
  float16 acc = (float16)(0.0f);
  for (uint r = 0; r < rows; ++r) {
    acc += ssm_act_load(dy + (size_t)r * C + c0, lanes) * ssm_act_load(u + (size_t)r * C + c0, lanes);
  }
  ssm_store(dd + c0, ssm_load(dd + c0, lanes) + acc, lanes);
}

// Rows b < B, the tokens in order.
__kernel void ssm_decode(__global act_t* y, __global float2* state, __global const act_t* u,
                         __global const float* c_re, __global const float* c_im, __global const float* d,
                         __global const float4* steps, const uint B, const uint T, const uint C, const uint N,
                         const uint reset) {
  size_t b;
  uint c0, lanes;
  if (!ssm_block(B, C, &b, &c0, &lanes)) return;
  for (uint t = 0; t < T; ++t) {
    const size_t at = (b * T + t) * C + c0;
    const float16 v = ssm_act_load(u + at, lanes);
    float16 acc = ssm_load(d + c0, lanes) * v;
    for (uint n = 0; n < N; ++n) {
      const float4 s = steps[n];
      const size_t xi = (b * N + n) * C + c0;
      float16 x_re = (float16)(0.0f), x_im = (float16)(0.0f);
      if (!(reset && t == 0)) ssm_load_complex(state + xi, lanes, &x_re, &x_im);
      const float16 next_re = s.x * x_re - s.y * x_im + s.z * v, next_im = s.x * x_im + s.y * x_re + s.w * v;
      ssm_store_complex(state + xi, next_re, next_im, lanes);
      acc += ssm_load(c_re + (size_t)n * C + c0, lanes) * next_re - ssm_load(c_im + (size_t)n * C + c0, lanes) * next_im;
    }
    ssm_act_store(y + at, acc, lanes);
  }
}
