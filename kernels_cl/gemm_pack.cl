// Packing for pax-ocl's GEMM. An operand is seen as a matrix X (extent, k): op(A) (m, k), or
// op(B)^T (n, k), addressed as src[offset + batch*batch_stride + x*x_stride + kk*k_stride], which
// covers either transpose and any leading dimension. It is copied into contiguous zero-padded
// panels of PANEL rows of X, k-major:
//   dst[batch][p][kk][r] = X[p*PANEL + r][kk]   (0 where p*PANEL + r >= extent)
// so the compute kernels read both operands with unit stride (and power-of-two leading dimensions
// stop thrashing cache sets). One work-item packs a PANEL x 16 block: it reads whichever way the
// source is contiguous, 16 floats at a time. The source is act_t (kernels_cl/dtype.cl): a program
// built per operand dtype widens 16-bit operands to float here, so the compute kernels see floats.

__kernel void gemm_pack(__global float* dst, __global const act_t* src, const uint offset, const uint batch_stride,
                        const uint x_stride, const uint k_stride, const uint extent, const uint k, const uint panel,
                        const uint panels, const uint kblocks, const uint items) {
  const uint g = get_global_id(0);
  if (g >= items) return;
  const uint kb = g % kblocks, p = (g / kblocks) % panels, b = g / (kblocks * panels);
  const uint k0 = kb * 16, kc = min(16u, k - k0);
  __global const act_t* s = src + offset + (size_t)b * batch_stride;
  __global float* out = dst + (((size_t)b * panels + p) * k + k0) * panel;
  if (k_stride == 1) {
    // Rows of X are contiguous in k: read 16 k-values of each row, write them down the panel.
    for (uint r = 0; r < panel; ++r) {
      const uint x = p * panel + r;
      if (x >= extent) {
        for (uint t = 0; t < kc; ++t) out[t * panel + r] = 0.0f;
      } else if (kc == 16) {
        const float16 v = act_load16(s + (size_t)x * x_stride + k0);
        const float* lanes = (const float*)&v;
        for (uint t = 0; t < 16; ++t) out[t * panel + r] = lanes[t];
      } else {
        for (uint t = 0; t < kc; ++t) out[t * panel + r] = act_load(s, (size_t)x * x_stride + k0 + t);
      }
    }
  } else {
    // Columns of X are contiguous (x_stride == 1): each k-row of the panel is a straight copy.
    const uint valid = extent > p * panel ? min(panel, extent - p * panel) : 0;
    for (uint t = 0; t < kc; ++t) {
      __global const act_t* row = s + (size_t)(k0 + t) * k_stride + p * panel;
      __global float* o = out + t * panel;
      uint r = 0;
      for (; r + 16 <= valid; r += 16) vstore16(act_load16(row + r), 0, o + r);
      for (; r < valid; ++r) o[r] = act_load(row, r);
      for (; r < panel; ++r) o[r] = 0.0f;
    }
  }
}
