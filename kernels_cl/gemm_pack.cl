// Packing for pax-ocl's GEMM: op(A) (m, k) and op(B) (k, n), row-major with any leading dimension
// and either transpose, are copied into contiguous zero-padded panels, one batch after another:
//   A panels: Ap[batch][p][kk][r] = op(A)[p*PANEL + r][kk]   (PANEL rows, k-major)
//   B panels: Bp[batch][q][kk][c] = op(B)[kk][q*PANEL + c]   (PANEL columns, k-major)
// so the compute kernels stream both with unit stride whatever the caller's layout (this also
// removes the cache-set conflicts of power-of-two leading dimensions). One work-item per
// (batch, panel, kk) row of a panel.

__kernel void gemm_pack_a(__global float* dst, __global const float* src, const uint offset, const uint ld,
                          const uint batch_stride, const uint transposed, const uint m, const uint k,
                          const uint panel, const uint panels, const uint items) {
  const uint g = get_global_id(0);
  if (g >= items) return;
  const uint kk = g % k, p = (g / k) % panels, b = g / (k * panels);
  __global const float* a = src + offset + (size_t)b * batch_stride;
  __global float* out = dst + (((size_t)b * panels + p) * k + kk) * panel;
  for (uint r = 0; r < panel; ++r) {
    const uint i = p * panel + r;
    out[r] = i < m ? (transposed ? a[(size_t)kk * ld + i] : a[(size_t)i * ld + kk]) : 0.0f;
  }
}

__kernel void gemm_pack_b(__global float* dst, __global const float* src, const uint offset, const uint ld,
                          const uint batch_stride, const uint transposed, const uint k, const uint n,
                          const uint panel, const uint panels, const uint items) {
  const uint g = get_global_id(0);
  if (g >= items) return;
  const uint kk = g % k, q = (g / k) % panels, b = g / (k * panels);
  __global const float* bm = src + offset + (size_t)b * batch_stride;
  __global float* out = dst + (((size_t)b * panels + q) * k + kk) * panel;
  for (uint c = 0; c < panel; ++c) {
    const uint j = q * panel + c;
    out[c] = j < n ? (transposed ? bm[(size_t)j * ld + kk] : bm[(size_t)kk * ld + j]) : 0.0f;
  }
}
