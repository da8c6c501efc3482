// CPU variant of optimizer.cl (PoCL): float16 vectors; Adam takes 16 elements per work-item.

__kernel void sum_squares_partial(__global float* partial, __global const float* x, const uint n, const uint chunk) {
  const uint i = get_global_id(0);
  const uint begin = i * chunk;
  if (begin >= n) return;
  const uint end = min(begin + chunk, n);
  float16 acc = (float16)(0.0f);
  float tail = 0.0f;
  uint j = begin;
  for (; j + 16 <= end; j += 16) {
    const float16 v = vload16(0, x + j);
    acc = fma(v, v, acc);
  }
  for (; j < end; ++j) tail += x[j] * x[j];
  const float8 a = acc.lo + acc.hi;
  const float4 b = a.lo + a.hi;
  partial[i] = (b.x + b.y) + (b.z + b.w) + tail;
}

__kernel void adam_update(__global float* p, __global float* m, __global float* v, __global const float* grad,
                          const uint n, const float grad_scale, const float lr, const float decay1,
                          const float decay2, const float eps, const float weight_decay) {
  const uint base = get_global_id(0) * 16;
  if (base >= n) return;
  if (base + 16 <= n) {
    const float16 g = vload16(0, grad + base) * grad_scale;
    const float16 mi = decay1 * vload16(0, m + base) + (1.0f - decay1) * g;
    const float16 vi = decay2 * vload16(0, v + base) + (1.0f - decay2) * g * g;
    const float16 pi = vload16(0, p + base);
    vstore16(mi, 0, m + base);
    vstore16(vi, 0, v + base);
    vstore16(pi - lr * (mi / (sqrt(vi) + eps) + weight_decay * pi), 0, p + base);
  } else {
    for (uint i = base; i < n; ++i) {
      const float g = grad[i] * grad_scale;
      const float mi = decay1 * m[i] + (1.0f - decay1) * g;
      const float vi = decay2 * v[i] + (1.0f - decay2) * g * g;
      m[i] = mi;
      v[i] = vi;
      p[i] -= lr * (mi / (sqrt(vi) + eps) + weight_decay * p[i]);
    }
  }
}
