// Element-wise kernels over flat float arrays. One work-item per element; n need not be a
// multiple of any work-group size (the launcher rounds the range up, the guard trims it).

// out[i] = value                                                   out: (n)
__kernel void fill_f32(__global float* out, const float value, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) out[i] = value;
}

// y[i] += alpha * x[i]                                             x, y: (n)
__kernel void axpy_f32(__global float* y, __global const float* x, const float alpha, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) y[i] = fma(alpha, x[i], y[i]);
}

// out[i] = a[i] + b[i]   (the residual add)                        a, b, out: (n)
__kernel void add_f32(__global float* out, __global const float* a, __global const float* b, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}

// x[i] *= alpha                                                     x: (n)
__kernel void scale_f32(__global float* x, const float alpha, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) x[i] *= alpha;
}
