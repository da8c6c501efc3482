// Tensor-core GEMM for NVIDIA GPUs through inline PTX (kernels_cl/tensor_core_gemm.h):
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C    per batch (group id 2)
// A and B are both bfloat16 (-DMMA_AB_BF16) or both float16 (-DMMA_AB_F16), read as raw 16-bit
// words, products accumulating in float32 (mma.sync.m16n8k16 ... .f32); or both float32
// (-DMMA_AB_TF32), each operand rounded to TF32 (10-bit mantissa, cvt.rna) as a fragment is read,
// products accumulating in float32 (mma.sync.m16n8k8 ... .tf32). C is act_t (dtype.cl: float32,
// bfloat16 or float16 by -DPAX_ACT_*), rounded once when stored, with gemm.h's epilogue in programs
// built with -DGEMM_EPILOGUE=1 (gemm_epilogue.cl, prepended). Row-major storage as in gemm.h:
// op(A) = A (stored m x k) in gemm_mma_n?, A^T (stored k x m) in gemm_mma_t?; likewise B.
// Elements travel as raw words (elem_t: ushort, or uint for TF32) in chunks of 16 bytes (CHUNK
// elements: 8, or 4 for TF32).
//
// Work-group: THREADS = (BM / WM) * (BN / WN) warps of 32, one BM x BN block of C (group ids 0 and
// 1 = block column and row). Each warp owns a WM x WN sub-block: MI x NI accumulator fragments of
// 16 x 8. Per BK-deep step the group copies an A and a B tile into local memory in the operand's
// stored layout (rows of 16-byte chunks), STAGES tiles deep; warps read fragments (16-bit:
// ldmatrix, .trans where the stored layout is the transpose of the fragment's; TF32: one 32-bit
// local read per element, which ldmatrix cannot transpose) and issue mma.sync. Two layouts of a
// tile row keep those reads and the copies free of bank conflicts (tile_offset):
//   SWIZZLE=0: each row padded by PAD_K or PAD_MN elements (16-byte aligned rows);
//   SWIZZLE=1 (16-bit operands; BM, BN, BK powers of two): no padding; a row's 16-byte chunks are
//              permuted by XOR with a function of the row, so 8 consecutive rows' chunk c land on 8
//              distinct 16-byte bank groups. A 128 x 128 x 32 tile then holds 3 stages in 48 KiB
//              (NVIDIA's OpenCL local memory), where padded rows fit 2.
//   ASYNC_COPY=1: cp.async 16-byte copies (zero-filled beyond the matrix through src-size),
//                 STAGES-deep pipeline with commit_group / wait_group. Needs every chunk 16-byte
//                 aligned: offsets, leading dimensions and batch strides multiples of CHUNK.
//   ASYNC_COPY=0: element-wise loads with the same zero fill (any alignment), same pipeline.
// Edges: tiles beyond m, n or k are zero-filled, stores are predicated: any m, n, k >= 1.
//
// The PTX exists only in builds with -DPAX_NVIDIA_PTX, which the host adds after the tensor-core
// probe passed on an NVIDIA device. -DPAX_MMA_EMULATE instead replaces each PTX instruction by
// portable OpenCL C with its documented per-lane semantics (local-memory exchange and barriers;
// slow), so the index math of this file runs against the float64 reference on any device (tests).
#if !defined(MMA_AB_BF16) && !defined(MMA_AB_F16) && !defined(MMA_AB_TF32)
#error "gemm_mma.cl: -DMMA_AB_BF16, -DMMA_AB_F16 or -DMMA_AB_TF32 selects the operands' dtype"
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif
#if MMA_TF32
#if SWIZZLE
#error "gemm_mma.cl: SWIZZLE=1 is for 16-bit operands (TF32 fragments read single words, for which padding is conflict-free)"
#endif
typedef uint elem_t;
#define CHUNK 4  // elements per 16-byte chunk
// Row padding: a fragment reads element (g, t) of 8 x 4 lanes (g = lane / 4, t = lane % 4) along
// rows of BK elements (stored k-contiguous) or element (t, g) along rows of BM or BN elements; a row
// stride of 4 (mod 32) words, resp. 8 (mod 32), puts the 32 lanes on 32 banks.
#define PAD_K 4
#define PAD_MN 8
#else
typedef ushort elem_t;
#define CHUNK 8
#if SWIZZLE
#define PAD_K 0
#define PAD_MN 0
#else
#define PAD_K 8   // 16 bytes: ldmatrix's rows on distinct banks
#define PAD_MN 8
#endif
#endif

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef ASYNC_COPY
#define ASYNC_COPY 1
#endif

#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * WARPS_N * 32)
#define MI (WM / 16)  // 16-row A fragments per warp
#define NI (WN / 8)   // 8-column B fragments per warp
// Elements of one stage's tile in each stored layout (rows x (row length + its padding)).
#define A_STAGE(ta) ((ta) ? BK * (BM + PAD_MN) : BM * (BK + PAD_K))
#define B_STAGE(tb) ((tb) ? BN * (BK + PAD_K) : BK * (BN + PAD_MN))

#if BM % WM || BN % WN || WM % 16 || WN % 16 || BK % 16 || STAGES < 2
#error "gemm_mma.cl: tile needs WM | BM, WN | BN, 16 | WM, 16 | WN, 16 | BK and STAGES >= 2"
#endif
#if (BM * BK / CHUNK) % THREADS || (BN * BK / CHUNK) % THREADS
#error "gemm_mma.cl: a tile's 16-byte chunks must spread evenly over the work-group"
#endif
#if SWIZZLE && ((BM & (BM - 1)) || (BN & (BN - 1)) || (BK & (BK - 1)))
#error "gemm_mma.cl: SWIZZLE=1 needs BM, BN and BK powers of two (the XOR must stay inside a row)"
#endif

// Offset of element (r, c) of a stage tile whose rows hold TC elements, padded by `pad` (c within
// one 16-byte chunk stays contiguous, so ldmatrix rows and cp.async chunks are whole).
// Swizzled: the 128 bytes of the 32 banks hold `per_line` rows (TC / CHUNK chunks each) or part of
// one; rows r and r + per_line differ in their XOR term, over a period of 8 line-sized steps (or
// the row's chunk count, if smaller), so any 8 consecutive rows read at one logical chunk, or 8
// consecutive chunks written, hit 8 distinct bank groups.
MMA_FN uint tile_offset(uint r, uint c, uint TC, uint pad) {
#if SWIZZLE
  const uint chunks = TC / CHUNK, per_line = chunks >= 8 ? 1 : 8 / chunks, period = chunks >= 8 ? 8 : chunks;
  return r * TC + ((c / CHUNK) ^ (r / per_line % period)) * CHUNK + c % CHUNK;
#else
  return r * (TC + pad) + c;
#endif
}

// ---- Asynchronous copies (cp.async; plain loads in the emulation) ------------------------------

#if defined(PAX_MMA_EMULATE)
#undef ASYNC_COPY
#define ASYNC_COPY 0
#endif
#if ASYNC_COPY
// Copies `bytes` (0..16) of the 16 at src to dst and zero-fills the rest; both 16-byte aligned.
MMA_FN void copy_chunk(__local elem_t* dst, __global const elem_t* src, uint bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(SHARED_ADDR(dst)), "l"(src), "r"(bytes)
               : "memory");
}
MMA_FN void commit_copies(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most STAGES - 2 committed groups of this work-item's copies are in flight.
#if STAGES == 2
#define WAIT_GROUP "cp.async.wait_group 0;"
#elif STAGES == 3
#define WAIT_GROUP "cp.async.wait_group 1;"
#elif STAGES == 4
#define WAIT_GROUP "cp.async.wait_group 2;"
#else
#error "gemm_mma.cl: STAGES 2, 3 or 4"
#endif
MMA_FN void wait_copies(void) { asm volatile(WAIT_GROUP ::: "memory"); }
#endif

#if !ASYNC_COPY
MMA_FN void commit_copies(void) {}
MMA_FN void wait_copies(void) {}
#endif

// ---- Tiles -------------------------------------------------------------------------------------

// Copies rows [r0, r0 + TR) x columns [c0, c0 + TC) of a row-major (rows x cols, leading dimension
// ld) matrix at src into dst (TR rows of TC + pad), zeros beyond the matrix.
MMA_FN void load_tile(__local elem_t* dst, __global const elem_t* src, uint ld, uint rows, uint cols, uint r0, uint c0,
                      uint TR, uint TC, uint pad) {
  const uint chunks_per_row = TC / CHUNK, tid = get_local_id(0);
UNROLL
  for (uint i = 0; i < TR * TC / CHUNK / THREADS; ++i) {
    const uint chunk = tid + i * THREADS, r = chunk / chunks_per_row, cc = chunk % chunks_per_row * CHUNK;
    const uint gr = r0 + r, gc = c0 + cc;
    __local elem_t* d = dst + tile_offset(r, cc, TC, pad);
    const uint avail = gr < rows && gc < cols ? (cols - gc < (uint)CHUNK ? cols - gc : (uint)CHUNK) : 0u;  // inside the matrix
#if ASYNC_COPY
    copy_chunk(d, avail ? src + (size_t)gr * ld + gc : src, (uint)sizeof(elem_t) * avail);
#else
    __global const elem_t* s = src + (size_t)gr * ld + gc;
UNROLL
    for (uint e = 0; e < CHUNK; ++e) d[e] = e < avail ? s[e] : (elem_t)0;
#endif
  }
}

// Stage `stage` <- the k-tile starting at k0 of both operands.
MMA_FN void load_stage(const bool ta, const bool tb, __local elem_t* as, __local elem_t* bs, uint stage, uint k0,
                       __global const elem_t* a, uint lda, __global const elem_t* b, uint ldb, uint m, uint n, uint k,
                       uint bm0, uint bn0) {
  __local elem_t* at = as + stage * A_STAGE(ta);
  __local elem_t* bt = bs + stage * B_STAGE(tb);
  if (ta) load_tile(at, a, lda, k, m, k0, bm0, BK, BM, PAD_MN);  // A stored (k, m)
  else load_tile(at, a, lda, m, k, bm0, k0, BM, BK, PAD_K);      // A stored (m, k)
  if (tb) load_tile(bt, b, ldb, n, k, bn0, k0, BN, BK, PAD_K);   // B stored (n, k)
  else load_tile(bt, b, ldb, k, n, k0, bn0, BK, BN, PAD_MN);     // B stored (k, n)
}

#if MMA_TF32
// One k step (8 deep) of the warp's MI x NI fragments from the stage's tiles, TF32 (see mma_1688).
MMA_FN void mma_k_step(const bool ta, const bool tb, __local const uint* at, __local const uint* bt, uint kk, uint wm0,
                       uint wn0, float acc[MI][NI][4], __local uint* xch) {
  const uint lane = get_local_id(0) % 32, g = lane / 4, t = lane % 4;
  uint af[MI][4], bfr[NI][2];
UNROLL
  for (uint i = 0; i < MI; ++i)
UNROLL
    for (uint e = 0; e < 4; ++e) {
      const uint row = wm0 + i * 16 + g + 8 * (e % 2), kc = kk + t + 4 * (e / 2);
      af[i][e] = to_tf32(at[ta ? tile_offset(kc, row, BM, PAD_MN) : tile_offset(row, kc, BK, PAD_K)]);
    }
UNROLL
  for (uint j = 0; j < NI; ++j)
UNROLL
    for (uint e = 0; e < 2; ++e) {
      const uint col = wn0 + j * 8 + g, kc = kk + t + 4 * e;
      bfr[j][e] = to_tf32(bt[tb ? tile_offset(col, kc, BK, PAD_K) : tile_offset(kc, col, BN, PAD_MN)]);
    }
UNROLL
  for (uint i = 0; i < MI; ++i)
UNROLL
    for (uint j = 0; j < NI; ++j) mma_1688(acc[i][j], af[i], bfr[j], xch);
}
#else
// One k step (16 deep) of the warp's MI x NI fragments from the stage's tiles, 16-bit (ldmatrix).
MMA_FN void mma_k_step(const bool ta, const bool tb, __local const ushort* at, __local const ushort* bt, uint kk,
                       uint wm0, uint wn0, float acc[MI][NI][4], __local uint* xch) {
  const uint lane = get_local_id(0) % 32;
  // A fragment (16 x 16 at rows wm0 + 16 i): matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15), the
  // row halves first. Stored (m, k): lane l addresses row l % 16, k (l / 16) 8. Stored (k, m),
  // transposed on load: lane l addresses k (l / 16) 8 + l % 8, row (l / 8 % 2) 8.
  uint af[MI][4];
UNROLL
  for (uint i = 0; i < MI; ++i) {
    const uint row = wm0 + i * 16;
    const uint off = ta ? tile_offset(kk + lane / 16 * 8 + lane % 8, row + lane / 8 % 2 * 8, BM, PAD_MN)
                        : tile_offset(row + lane % 16, kk + lane / 16 * 8, BK, PAD_K);
    ldmatrix_x4(af[i], at, off, ta, xch);
  }
  // B fragments, two 8-column ones per ldmatrix: matrices (k 0-7 | 8-15) of columns 0-7, then
  // of columns 8-15. Stored (n, k): lane l addresses column (l / 16) 8 + l % 8, k (l / 8 % 2) 8.
  // Stored (k, n), transposed on load: k (l / 8 % 2) 8 + l % 8, column (l / 16) 8.
  uint bfr[NI][2];
UNROLL
  for (uint j = 0; j < NI; j += 2) {
    const uint col = wn0 + j * 8;
    const uint off = tb ? tile_offset(col + lane / 16 * 8 + lane % 8, kk + lane / 8 % 2 * 8, BK, PAD_K)
                        : tile_offset(kk + lane / 8 % 2 * 8 + lane % 8, col + lane / 16 * 8, BN, PAD_MN);
    uint r[4];
    ldmatrix_x4(r, bt, off, !tb, xch);
    bfr[j][0] = r[0];
    bfr[j][1] = r[1];
    bfr[j + 1][0] = r[2];
    bfr[j + 1][1] = r[3];
  }
UNROLL
  for (uint i = 0; i < MI; ++i)
UNROLL
    for (uint j = 0; j < NI; ++j) mma_16816(acc[i][j], af[i], bfr[j], xch);
}
#endif

// ---- The GEMM ----------------------------------------------------------------------------------

MMA_FN void gemm_mma(const bool ta, const bool tb, __local elem_t* as, __local elem_t* bs, __local uint* xch,
                     __global act_t* c, uint c_off, uint ldc, uint c_stride, __global const elem_t* a, uint a_off,
                     uint lda, uint a_stride, __global const elem_t* b, uint b_off, uint ldb, uint b_stride, uint m,
                     uint n, uint k, float alpha, float beta, __global const act_t* bias, __global act_t* aux,
                     uint ld_aux, uint epilogue, bool aux_pairs) {
  const uint tid = get_local_id(0), lane = tid % 32, warp = tid / 32;
  const uint bn0 = get_group_id(0) * BN, bm0 = get_group_id(1) * BM;
  const size_t batch = get_group_id(2);
  a += a_off + batch * a_stride;
  b += b_off + batch * b_stride;
  const uint wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;  // the warp's sub-block in the block

  float acc[MI][NI][4];
UNROLL
  for (uint i = 0; i < MI; ++i)
UNROLL
    for (uint j = 0; j < NI; ++j)
UNROLL
      for (uint e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const uint ktiles = (k + BK - 1) / BK;
  // Prologue: the first STAGES - 1 k-tiles in flight, one commit group each (empty past the end,
  // so that wait_copies' count always means "tile kt has landed").
UNROLL
  for (uint s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_stage(ta, tb, as, bs, s, s * BK, a, lda, b, ldb, m, n, k, bm0, bn0);
    commit_copies();
  }
  for (uint kt = 0; kt < ktiles; ++kt) {
    wait_copies();                   // this work-item's copies of tile kt have landed
    barrier(CLK_LOCAL_MEM_FENCE);    // everyone's have, and everyone is done with tile kt - 1
    const uint next = kt + STAGES - 1;  // refill the stage tile kt - 1 used
    if (next < ktiles) load_stage(ta, tb, as, bs, next % STAGES, next * BK, a, lda, b, ldb, m, n, k, bm0, bn0);
    commit_copies();

    __local const elem_t* at = as + kt % STAGES * A_STAGE(ta);
    __local const elem_t* bt = bs + kt % STAGES * B_STAGE(tb);
UNROLL
    for (uint kk = 0; kk < BK; kk += KSTEP) mma_k_step(ta, tb, at, bt, kk, wm0, wn0, acc, xch);
  }

  // Stores: accumulators 2 h and 2 h + 1 of fragment (i, j) are C elements (g + 8 h, 2 t) and
  // (g + 8 h, 2 t + 1) of that 16 x 8 fragment, g = lane / 4, t = lane % 4: one pair per store
  // (gemm_epilogue.cl's gemm_store_pair: + beta C and, in -DGEMM_EPILOGUE=1 builds, the bias / GELU
  // epilogue), element by element where C (or aux) is not pair-aligned or at an odd last column.
  // Not in TF32 builds: there the pairs made ptxas spill 8 bytes in gemm_mma_tt (sm_90, at the
  // 128 registers it keeps for 2 blocks an SM); their element stores are as before.
  const size_t c_base = c_off + batch * c_stride;
#if MMA_TF32
  const bool paired = false;
#else
  const bool paired = c_base % 2 == 0 && ldc % 2 == 0 && aux_pairs;
#endif
  c += c_base;
UNROLL
  for (uint i = 0; i < MI; ++i)
UNROLL
    for (uint j = 0; j < NI; ++j)
UNROLL
      for (uint h = 0; h < 2; ++h) {
        const uint row = bm0 + wm0 + i * 16 + lane / 4 + h * 8, col = bn0 + wn0 + j * 8 + lane % 4 * 2;
        if (row >= m || col >= n) continue;
        const float2 v = alpha * (float2)(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        if (col + 1 < n) gemm_store_pair(c, ldc, row, col, v, beta, bias, aux, ld_aux, epilogue, paired);
        else gemm_store(c, ldc, row, col, v.x, beta, bias, aux, ld_aux, epilogue);
      }
}

// One kernel per transpose pair; launch with local size (THREADS, 1, 1) and global size
// (ceil(n / BN) THREADS, ceil(m / BM), batch).
#if defined(PAX_MMA_EMULATE)
#define XCH_DECL __local uint xch[THREADS * 8];
#else
#define XCH_DECL __local uint* xch = 0;
#endif
#define GEMM_MMA_KERNEL(name, ta, tb)                                                                                  \
  __kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void name(                                             \
      __global act_t* c, uint c_off, uint ldc, uint c_stride, __global const elem_t* a, uint a_off, uint lda,          \
      uint a_stride, __global const elem_t* b, uint b_off, uint ldb, uint b_stride, uint m, uint n, uint k,            \
      float alpha, float beta, __global const act_t* bias, uint bias_off, __global act_t* aux, uint aux_off,           \
      uint ld_aux, uint epilogue) {                                                                                    \
    __local elem_t as[STAGES * A_STAGE(ta)] __attribute__((aligned(16)));                                              \
    __local elem_t bs[STAGES * B_STAGE(tb)] __attribute__((aligned(16)));                                              \
    XCH_DECL                                                                                                           \
    gemm_mma(ta, tb, as, bs, xch, c, c_off, ldc, c_stride, a, a_off, lda, a_stride, b, b_off, ldb, b_stride, m, n, k,  \
             alpha, beta, bias + bias_off, aux + aux_off, ld_aux, epilogue,                                            \
             epilogue == 0 || (aux_off % 2 == 0 && ld_aux % 2 == 0));                                                  \
  }
GEMM_MMA_KERNEL(gemm_mma_nn, false, false)
GEMM_MMA_KERNEL(gemm_mma_nt, false, true)
GEMM_MMA_KERNEL(gemm_mma_tn, true, false)
GEMM_MMA_KERNEL(gemm_mma_tt, true, true)
