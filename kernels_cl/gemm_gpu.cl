// pax-ocl's GEMM for GPUs: C = alpha * A B + beta * C on packed panels of 64 (gemm_pack.cl with
// PANEL = 64). Classic local-memory tiling: a 16 x 16 work-group computes a 64 x 64 block of C,
// each work-item a 4 x 4 micro-tile, staging 16-deep slices of the A and B panels in local memory
// (the panels make those loads contiguous, hence coalesced). C is act_t (kernels_cl/dtype.cl).
#define TS 64
#define TK 16

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm_gpu(__global act_t* c, const uint c_offset, const uint ldc, const uint c_batch_stride,
              __global const float* ap_all, __global const float* bp_all, const uint m, const uint n, const uint k,
              const uint m_panels, const uint n_panels, const float alpha, const float beta) {
  const uint tx = get_local_id(0), ty = get_local_id(1);
  const uint q = get_group_id(0), p = get_group_id(1), b = get_group_id(2);
  __global const float* ap = ap_all + (((size_t)b * m_panels + p) * k) * TS;
  __global const float* bp = bp_all + (((size_t)b * n_panels + q) * k) * TS;
  __local float as[TK][TS];
  __local float bs[TK][TS];
  float acc[4][4];  // registers: every loop indexing it is unrolled (a brace initialiser became a
                    // memset, and the array a stack frame ptxas reported)
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  const uint lid = ty * 16 + tx;  // 256 work-items load 16 x 64 = 1024 floats: 4 each
  for (uint k0 = 0; k0 < k; k0 += TK) {
    for (uint e = lid; e < TK * TS; e += 256) {
      const uint kk = e / TS, col = e % TS;
      as[kk][col] = k0 + kk < k ? ap[(size_t)(k0 + kk) * TS + col] : 0.0f;
      bs[kk][col] = k0 + kk < k ? bp[(size_t)(k0 + kk) * TS + col] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint kk = 0; kk < TK; ++kk) {
      float a[4], bb[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = as[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bb[j] = bs[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], bb[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global act_t* cb = c + c_offset + (size_t)b * c_batch_stride;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint row = p * TS + ty * 4 + i;
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint col = q * TS + tx * 4 + j;
      if (col >= n) continue;
      const size_t at = (size_t)row * ldc + col;
      act_store(cb, at, alpha * acc[i][j] + (beta != 0.0f ? beta * act_load(cb, at) : 0.0f));
    }
  }
}
