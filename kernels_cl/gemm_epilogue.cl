// The GPU GEMMs' epilogue (gemm.h's GemmEpilogue), as they store an element of C, and their split-k
// sum (gemm_split_sum); prepended (program_loader.cpp) to gemm_direct.cl and gemm_mma.cl, after
// dtype.cl and gelu_math.cl.
// `epilogue` bits (batch 1): GEMM_BIAS adds bias[col] (act_t) to the float result;
// GEMM_GELU_GRAD multiplies it by gelu'(Z[row, col]); GEMM_GELU also stores gelu of it into G.
// Z or G is `aux` (act_t, its own offset and ld; never both). Without a bit its buffer is never
// read or written (the host passes C's there; kernels_cl/gemm_epilogue.h builds the arguments).
// Only programs built with -DGEMM_EPILOGUE=1 look at the bits: the plain GEMMs are built without
// it, so the epilogue costs them nothing.
#ifndef GEMM_EPILOGUE
#define GEMM_EPILOGUE 0
#endif
#define GEMM_BIAS 1u
#define GEMM_GELU 2u
#define GEMM_GELU_GRAD 4u

// Stores element (row, col) of C from its float value v (alpha already applied): + beta C (beta
// == 0 never reads C, which may hold NaN garbage), then the epilogue; C rounded once. cb: C at
// its offset (and batch); bias and aux at theirs.
static inline __attribute__((always_inline)) void gemm_store(__global act_t* cb, const uint ldc, const uint row,
                                                             const uint col, float v, const float beta,
                                                             __global const act_t* bias, __global act_t* aux,
                                                             const uint ld_aux, const uint epilogue) {
  const size_t at = (size_t)row * ldc + col, aux_at = (size_t)row * ld_aux + col;
  if (beta != 0.0f) v += beta * act_load(cb, at);
  if (GEMM_EPILOGUE && (epilogue & GEMM_BIAS)) v += act_load(bias, col);
  if (GEMM_EPILOGUE && (epilogue & GEMM_GELU_GRAD)) v *= gelu_grad(act_load(aux, aux_at));
  act_store(cb, at, v);
  if (GEMM_EPILOGUE && (epilogue & GEMM_GELU)) act_store(aux, aux_at, v * gelu_sigmoid(v));
}

// Elements (row, col) and (row, col + 1) of C from v.x and v.y, as two gemm_store calls would store
// them, through 2-element accesses (act_load2 / act_store2) of C and, with GELU or its gradient,
// of aux. `paired`: the caller vouches that col is even and that C's and aux's bases and leading
// dimensions are too (every such access aligned); otherwise, and for the bias, element by element.
static inline __attribute__((always_inline)) void gemm_store_pair(__global act_t* cb, const uint ldc, const uint row,
                                                                  const uint col, float2 v, const float beta,
                                                                  __global const act_t* bias, __global act_t* aux,
                                                                  const uint ld_aux, const uint epilogue,
                                                                  const bool paired) {
  if (!paired) {
    gemm_store(cb, ldc, row, col, v.x, beta, bias, aux, ld_aux, epilogue);
    gemm_store(cb, ldc, row, col + 1, v.y, beta, bias, aux, ld_aux, epilogue);
    return;
  }
  const size_t at = (size_t)row * ldc + col, aux_at = (size_t)row * ld_aux + col;
  if (beta != 0.0f) v += beta * act_load2(cb, at);
  if (GEMM_EPILOGUE && (epilogue & GEMM_BIAS)) v += (float2)(act_load(bias, col), act_load(bias, col + 1));
  if (GEMM_EPILOGUE && (epilogue & GEMM_GELU_GRAD)) {
    const float2 z = act_load2(aux, aux_at);
    v *= (float2)(gelu_grad(z.x), gelu_grad(z.y));
  }
  act_store2(cb, at, v);
  if (GEMM_EPILOGUE && (epilogue & GEMM_GELU)) act_store2(aux, aux_at, (float2)(v.x * gelu_sigmoid(v.x), v.y * gelu_sigmoid(v.y)));
}

// Split k's second pass, for both GPU GEMMs (kernels_cl/split_k.h: a GEMM splits k when C has too
// few blocks to fill the device; its first pass ran the splits as a batch over consecutive k ranges
// into float32 partials (splits, m, n), dense): C = alpha * (partial 0 + partial 1 + ..., in that
// order) + beta * C and the epilogue, rounded once. A work-item per element of C, columns along
// local id 0 (coalesced). The loads are unrolled by 8 so that 8 are in flight while the adds keep
// their order; rolled, each waited for the add before it.
__kernel void gemm_split_sum(__global act_t* c, const uint c_offset, const uint ldc, __global const float* partials,
                             const uint m, const uint n, const uint splits, const float alpha, const float beta,
                             __global const act_t* bias, const uint bias_offset, __global act_t* aux,
                             const uint aux_offset, const uint ld_aux, const uint epilogue) {
  const uint col = get_global_id(0), row = get_global_id(1);
  if (row >= m || col >= n) return;
  const size_t plane = (size_t)m * n;
  float sum = 0.0f;
#pragma unroll 8
  for (uint s = 0; s < splits; ++s) sum += partials[s * plane + (size_t)row * n + col];
  gemm_store(c + c_offset, ldc, row, col, alpha * sum, beta, bias + bias_offset, aux + aux_offset, ld_aux, epilogue);
}
