// Optimizer kernels, GPU twin of optimizer.cl (the same update, the same arguments).

// partial[g] = sum of x[j]^2 over chunk g: a work-group per chunk, coalesced strided loads, then
// group_reduce.cl's fixed-order tree (the host adds the partials in double).
PAX_GPU_KERNEL void sum_squares_partial(__global float* partial, __global const float* x, const uint n,
                                        const uint chunk) {
  __local float scratch[PAX_WG];
  const uint g = get_group_id(0), begin = g * chunk;
  if (begin >= n) return;  // the whole group
  const uint end = min(begin + chunk, n);
  float acc = 0.0f;
  for (uint j = begin + get_local_id(0); j < end; j += PAX_WG) acc += x[j] * x[j];
  const float total = pax_group_sum(acc, scratch);
  if (get_local_id(0) == 0) partial[g] = total;
}

// praxis sharded_adam (optimizer.cl), one pass over the flat buffers, 4 parameters per work-item
// (float4 loads and stores of p, m, v and grad); a scalar tail past the last whole four.
inline float4 adam_step4(float4 p, float4* m, float4* v, const float4 grad, const float grad_scale, const float lr,
                         const float decay1, const float decay2, const float eps, const float weight_decay) {
  const float4 g = grad * grad_scale;
  *m = decay1 * *m + (1.0f - decay1) * g;
  *v = decay2 * *v + (1.0f - decay2) * g * g;
  return p - lr * (*m / (sqrt(*v) + eps) + weight_decay * p);
}

PAX_GPU_KERNEL void adam_update(__global float* p, __global float* m, __global float* v, __global const float* grad,
                                const uint n, const float grad_scale, const float lr, const float decay1,
                                const float decay2, const float eps, const float weight_decay) {
  const uint i = get_global_id(0) * 4;
  if (i + 4 <= n) {
    float4 mi = vload4(0, m + i), vi = vload4(0, v + i);
    const float4 pi = adam_step4(vload4(0, p + i), &mi, &vi, vload4(0, grad + i), grad_scale, lr, decay1, decay2, eps,
                                 weight_decay);
    vstore4(mi, 0, m + i);
    vstore4(vi, 0, v + i);
    vstore4(pi, 0, p + i);
    return;
  }
  for (uint j = i; j < n; ++j) {
    float4 mj = (float4)(m[j]), vj = (float4)(v[j]);
    p[j] = adam_step4((float4)(p[j]), &mj, &vj, (float4)(grad[j]), grad_scale, lr, decay1, decay2, eps, weight_decay).x;
    m[j] = mj.x;
    v[j] = vj.x;
  }
}
