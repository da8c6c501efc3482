// CPU variant of elementwise.cl (PoCL): each work-item handles 16 consecutive elements with
// float16 vectors; the last item takes the tail element by element.
#define ELEMENTS(n)                          \
  const uint base = get_global_id(0) * 16;   \
  if (base >= (n)) return;                   \
  const uint count = min(16u, (n) - base);

__kernel void fill_f32(__global float* out, const float value, const uint n) {
  ELEMENTS(n)
  if (count == 16) {
    vstore16((float16)(value), 0, out + base);
  } else {
    for (uint i = 0; i < count; ++i) out[base + i] = value;
  }
}

__kernel void axpy_f32(__global float* y, __global const float* x, const float alpha, const uint n) {
  ELEMENTS(n)
  if (count == 16) {
    vstore16(fma((float16)(alpha), vload16(0, x + base), vload16(0, y + base)), 0, y + base);
  } else {
    for (uint i = 0; i < count; ++i) y[base + i] = fma(alpha, x[base + i], y[base + i]);
  }
}

__kernel void add_f32(__global float* out, __global const float* a, __global const float* b, const uint n) {
  ELEMENTS(n)
  if (count == 16) {
    vstore16(vload16(0, a + base) + vload16(0, b + base), 0, out + base);
  } else {
    for (uint i = 0; i < count; ++i) out[base + i] = a[base + i] + b[base + i];
  }
}

__kernel void scale_f32(__global float* x, const float alpha, const uint n) {
  ELEMENTS(n)
  if (count == 16) {
    vstore16(alpha * vload16(0, x + base), 0, x + base);
  } else {
    for (uint i = 0; i < count; ++i) x[base + i] *= alpha;
  }
}
