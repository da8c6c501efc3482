// pax-ocl's GEMM for CPU devices (PoCL): C = alpha * A B + beta * C on packed panels
// (gemm_pack.cl). Written for how PoCL runs kernels on a CPU: one work-item computes one MR x NR
// register tile of C with explicit float16 accumulators (MR rows x NR/16 vectors, within the 32
// AVX-512 registers), work-groups of one work-item, and consecutive work-items walk down the A
// panels of one B panel so that B panel stays in cache. Built with -DMR=.. -DNR=.. (NR % 16 == 0);
// C is act_t (kernels_cl/dtype.cl): float32 accumulation, rounded once when stored.
#define NV (NR / 16)

__kernel void gemm_cpu(__global act_t* c, const uint c_offset, const uint ldc, const uint c_batch_stride,
                       __global const float* ap_all, __global const float* bp_all, const uint m, const uint n,
                       const uint k, const uint m_panels, const uint n_panels, const float alpha, const float beta,
                       const uint tiles) {
  const uint g = get_global_id(0);
  if (g >= tiles) return;
  const uint p = g % m_panels, q = (g / m_panels) % n_panels, b = g / (m_panels * n_panels);
  __global const float* ap = ap_all + (((size_t)b * m_panels + p) * k) * MR;
  __global const float* bp = bp_all + (((size_t)b * n_panels + q) * k) * NR;

  float16 acc[MR][NV];
#pragma unroll
  for (int r = 0; r < MR; ++r)
#pragma unroll
    for (int v = 0; v < NV; ++v) acc[r][v] = (float16)(0.0f);

  for (uint kk = 0; kk < k; ++kk) {
    float16 bv[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) bv[v] = vload16(v, bp);
#pragma unroll
    for (int r = 0; r < MR; ++r) {
      const float16 a = (float16)(ap[r]);
#pragma unroll
      for (int v = 0; v < NV; ++v) acc[r][v] = fma(a, bv[v], acc[r][v]);
    }
    ap += MR;
    bp += NR;
  }

  __global act_t* cb = c + c_offset + (size_t)b * c_batch_stride;
#pragma unroll
  for (int r = 0; r < MR; ++r) {
    const uint i = p * MR + r;
    if (i >= m) break;
    __global act_t* row = cb + (size_t)i * ldc;
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      const uint j = q * NR + v * 16;
      if (j + 16 <= n) {
        float16 out = alpha * acc[r][v];
        if (beta != 0.0f) out = fma((float16)(beta), act_load16(row + j), out);
        act_store16(row + j, out);
      } else {
        const float* lanes = (const float*)&acc[r][v];
        for (uint e = 0; j + e < n && e < 16; ++e) {
          const float prior = beta != 0.0f ? beta * act_load(row, j + e) : 0.0f;
          act_store(row, j + e, alpha * lanes[e] + prior);
        }
      }
    }
  }
}
