// Optimizer kernels: global gradient norm and Pax's Adam with decoupled weight decay.

// partial[i] = sum of x[j]^2 over chunk i (in order). The host adds the partials in double.
__kernel void sum_squares_partial(__global float* partial, __global const float* x, const uint n, const uint chunk) {
  const uint i = get_global_id(0);
  const uint begin = i * chunk;
  if (begin >= n) return;
  const uint end = min(begin + chunk, n);
  float acc = 0.0f;
  for (uint j = begin; j < end; ++j) acc += x[j] * x[j];
  partial[i] = acc;
}

// praxis sharded_adam: moments kept bias-corrected (m_t = d1 m + (1 - d1) g with
// d1 = b1 (1 - b1^(t-1)) / (1 - b1^t), likewise v), u = m / (sqrt(v) + eps) + wd * p,
// p -= lr * u. g is the raw gradient times grad_scale (global-norm clipping).
__kernel void adam_update(__global float* p, __global float* m, __global float* v, __global const float* grad,
                          const uint n, const float grad_scale, const float lr, const float decay1,
                          const float decay2, const float eps, const float weight_decay) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float g = grad[i] * grad_scale;
  const float mi = decay1 * m[i] + (1.0f - decay1) * g;
  const float vi = decay2 * v[i] + (1.0f - decay2) * g * g;
  m[i] = mi;
  v[i] = vi;
  p[i] -= lr * (mi / (sqrt(vi) + eps) + weight_decay * p[i]);
}
