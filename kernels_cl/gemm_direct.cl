// pax-ocl's GEMM for GPUs without packing (kernels_cl/direct_gemm.h):
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C    per batch (group id 2)
// A and B are read straight from their buffers: offsets, leading dimensions and batch strides are
// arguments; the transposes are compile-time constants of four entry points, gemm_direct_nn, _nt,
// _tn and _tt (one program holds all four, so a transpose never costs a build). Row-major storage as
// in gemm.h: op(A) = A (stored m x k) in gemm_direct_n?, A^T (stored k x m) in gemm_direct_t?.
//
// Dtypes: A and B by -DA_DTYPE / -DB_DTYPE (0 float32, 1 bfloat16, 2 float16), C by dtype.cl's act_t
// (-DPAX_ACT_*); products accumulate in float32, C is rounded once when stored. beta == 0 never
// reads C (it may hold NaN garbage).
//
// Epilogue: gemm_epilogue.cl (prepended), in the kernels' stores and the split sum's. Only
// programs built with -DGEMM_EPILOGUE=1 apply it (clang + ptxas, tile 64x64 r8x4: 95-105 registers
// with it, 95-101 without).
//
// Tile (compile-time, so a search can build variants): a work-group of (TN / WN) x (TM / WM)
// work-items computes a TM x TN block of C (group ids 0 and 1 = block column and row), each
// work-item a WM x WN register tile made of 4 x 4 pieces strided by 4 * (work-items along that
// side): a warp's float4 reads of local memory are then consecutive (no bank conflicts) and its C
// stores coalesce. K advances in TK-deep slices staged in local memory as floats, k-major
// (as[kk][row], bs[kk][col]), double-buffered: the global loads of slice s + 1 go into registers
// before slice s is multiplied and into the other buffer after it, so their latency hides behind
// the FMAs and one barrier per slice suffices.
// Global loads go in 4-element chunks along each operand's stored contiguous dimension (coalesced
// for every transpose); a chunk is one vector load when the host says the operand is 4-aligned
// (vec_a / vec_b: offset, leading dimension and batch stride multiples of 4) and the chunk lies
// inside the matrix, else up to 4 guarded scalar loads. Beyond m, n or k: zeros; C stores guarded.
// The tiles auto times on GPUs (direct_auto_tiles) and a partly unrolled one, for scripts/check_ptx.sh:
// check_ptx: -DTM=128 -DTN=64 -DTK=16 -DWM=8 -DWN=8
// check_ptx: -DTM=128 -DTN=128 -DTK=8 -DWM=8 -DWN=8
// check_ptx: -DTM=64 -DTN=64 -DTK=16 -DWM=8 -DWN=4
// check_ptx: -DTM=64 -DTN=64 -DTK=16 -DWM=8 -DWN=4 -DKU=4
// check_ptx: -DTM=64 -DTN=64 -DTK=16 -DWM=8 -DWN=4 -DGEMM_EPILOGUE=1
#ifndef TM
#define TM 128
#endif
#ifndef TN
#define TN 64
#endif
#ifndef TK
#define TK 16
#endif
#ifndef WM
#define WM 8
#endif
#ifndef WN
#define WN 8
#endif
// KU: the k steps of a slice unrolled together (a divisor of TK; default TK, the whole slice). A
// smaller KU keeps fewer local-memory reads in flight, so fewer registers: a trade `pax-ocl tune`
// measures, since the best one depends on the device's compiler.
#ifndef KU
#define KU TK
#endif
#if KU < TK
#define DIRECT_K_RUN_PRAGMA _Pragma("unroll 1")
#else
#define DIRECT_K_RUN_PRAGMA
#endif
#ifndef A_DTYPE
#define A_DTYPE 0
#endif
#ifndef B_DTYPE
#define B_DTYPE 0
#endif

#define NX (TN / WN)                  // work-items along n (local id 0)
#define NY (TM / WM)                  // work-items along m (local id 1)
#define NT (NX * NY)                  // work-items per group
#define LA (TM + 4)                   // local row lengths, padded (multiples of 4: float4 aligned)
#define LB (TN + 4)
#define CHUNKS_A (TM * TK / 4 / NT)   // 4-element chunks of a slice each work-item fetches
#define CHUNKS_B (TN * TK / 4 / NT)

#if TM % WM || TN % WN || WM % 4 || WN % 4 || TK % 4 || KU < 1 || TK % KU || (TM * TK / 4) % NT || (TN * TK / 4) % NT || \
    CHUNKS_A < 1 || CHUNKS_B < 1
#error "gemm_direct.cl: WM, WN, TK multiples of 4 dividing TM, TN; KU dividing TK; each slice a whole number of chunks per work-item"
#endif

// Helpers inlined always: the register arrays they take stay registers, and no compiler is left
// with a C99 `inline` definition to call (clang's NVPTX target emitted an unresolved call).
#define DIRECT_FN static inline __attribute__((always_inline))

// Storage type of A and B by kind: float, ushort (bfloat16 bits) or half.
#define PAX_ST0 float
#define PAX_ST1 ushort
#define PAX_ST2 half
#define PAX_ST_(kind) PAX_ST##kind
#define PAX_ST(kind) PAX_ST_(kind)
typedef PAX_ST(A_DTYPE) a_t;
typedef PAX_ST(B_DTYPE) b_t;

// Element i of an operand stored as `kind` (a compile-time constant after inlining).
DIRECT_FN float direct_load1(__global const void* p, size_t i, const int kind) {
  if (kind == 1) return pax_bf16_to_float(((__global const ushort*)p)[i]);
  if (kind == 2) return vload_half(i, (__global const half*)p);
  return ((__global const float*)p)[i];
}

// Elements i .. i + 3, i a multiple of 4 from a 4-element-aligned base: one vector load.
DIRECT_FN float4 direct_load4(__global const void* p, size_t i, const int kind) {
  if (kind == 1) return as_float4(convert_uint4(*((__global const ushort4*)p + i / 4)) << 16);
  if (kind == 2) return vloada_half4(i / 4, (__global const half*)p);
  return *((__global const float4*)p + i / 4);
}

// The 4-element chunk of an operand X (extent e_lim along m or n, k_lim along k, leading dimension
// ld) starting at (e, kk), running along e when X is stored k-major (e_contig) else along k. Zeros
// beyond the matrix. Unchecked (checked == 0, a constant): the caller knows the chunk lies inside a
// 4-aligned operand, so it is one vector load with no bounds tests.
DIRECT_FN float4 direct_fetch(__global const void* x, const int kind, const uint vec, const int e_contig, const uint ld,
                              const uint e_lim, const uint k_lim, const uint e, const uint kk, const int checked) {
  const size_t at = e_contig ? (size_t)kk * ld + e : (size_t)e * ld + kk;
  if (!checked) return direct_load4(x, at, kind);
  const uint run0 = e_contig ? e : kk, run_lim = e_contig ? e_lim : k_lim;
  if ((e_contig ? kk : e) >= (e_contig ? k_lim : e_lim) || run0 >= run_lim) return (float4)(0.0f);
  if (vec && run0 + 4 <= run_lim) return direct_load4(x, at, kind);
  float4 v = (float4)(0.0f);
  v.x = direct_load1(x, at, kind);
  if (run0 + 1 < run_lim) v.y = direct_load1(x, at + 1, kind);
  if (run0 + 2 < run_lim) v.z = direct_load1(x, at + 2, kind);
  if (run0 + 3 < run_lim) v.w = direct_load1(x, at + 3, kind);
  return v;
}

// Lane l of v (l a constant after unrolling).
DIRECT_FN float direct_lane(const float4 v, const uint l) { return l == 0 ? v.x : l == 1 ? v.y : l == 2 ? v.z : v.w; }

// Chunk c (of E * TK / 4) of a slice: its (e, kk) within the tile, for either stored layout.
DIRECT_FN uint2 direct_chunk_at(const uint c, const uint E, const int e_contig) {
  return e_contig ? (uint2)(c % (E / 4) * 4, c / (E / 4)) : (uint2)(c / (TK / 4), c % (TK / 4) * 4);
}

// Writes a fetched chunk into a k-major local slice xs[kk][e] with rows of L floats.
DIRECT_FN void direct_stash(__local float* xs, const uint L, const int e_contig, const uint2 at, const float4 v) {
  if (e_contig) {
    *(__local float4*)(xs + at.y * L + at.x) = v;
  } else {
    xs[at.y * L + at.x] = v.x;
    xs[(at.y + 1) * L + at.x] = v.y;
    xs[(at.y + 2) * L + at.x] = v.z;
    xs[(at.y + 3) * L + at.x] = v.w;
  }
}

// Fetches this work-item's chunks of slice k0 of A (into ra) and B (into rb); `checked` as in
// direct_fetch, for the whole slice.
DIRECT_FN void direct_fetch_slice(float4* ra, float4* rb, __global const void* a, __global const void* b, const int ta,
                                  const int tb, const uint vec_a, const uint vec_b, const uint lda, const uint ldb,
                                  const uint m, const uint n, const uint k, const uint row0, const uint col0,
                                  const uint k0, const uint lid, const int checked) {
#pragma unroll
  for (uint i = 0; i < CHUNKS_A; ++i) {
    const uint2 at = direct_chunk_at(lid + i * NT, TM, ta);
    ra[i] = direct_fetch(a, A_DTYPE, vec_a, ta, lda, m, k, row0 + at.x, k0 + at.y, checked);
  }
#pragma unroll
  for (uint i = 0; i < CHUNKS_B; ++i) {
    const uint2 at = direct_chunk_at(lid + i * NT, TN, !tb);
    rb[i] = direct_fetch(b, B_DTYPE, vec_b, !tb, ldb, n, k, col0 + at.x, k0 + at.y, checked);
  }
}

DIRECT_FN void direct_stash_slice(__local float* as, __local float* bs, const float4* ra, const float4* rb,
                                  const int ta, const int tb, const uint lid) {
#pragma unroll
  for (uint i = 0; i < CHUNKS_A; ++i) direct_stash(as, LA, ta, direct_chunk_at(lid + i * NT, TM, ta), ra[i]);
#pragma unroll
  for (uint i = 0; i < CHUNKS_B; ++i) direct_stash(bs, LB, !tb, direct_chunk_at(lid + i * NT, TN, !tb), rb[i]);
}

// The whole kernel for one transpose combination (ta, tb: constants). as_all / bs_all: the two
// local buffers of each operand, 2 * TK * LA and 2 * TK * LB floats.
DIRECT_FN void gemm_direct(__global act_t* c, const uint c_offset, const uint ldc, const uint c_stride,
                           __global const void* a_base, const uint lda, __global const void* b_base, const uint ldb,
                           const uint m, const uint n, const uint k, const float alpha, const float beta,
                           const uint vec_a, const uint vec_b, const int ta, const int tb, __local float* as_all,
                           __local float* bs_all, __global const act_t* bias, __global act_t* aux,
                           const uint ld_aux, const uint epilogue) {
  const uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * NX + tx;
  const uint col0 = get_group_id(0) * TN, row0 = get_group_id(1) * TM;
  float4 acc[WM][WN / 4];  // acc[i][j / 4] lane j % 4: row i, column j of the register tile
#pragma unroll
  for (uint i = 0; i < WM; ++i)
#pragma unroll
    for (uint j = 0; j < WN / 4; ++j) acc[i][j] = (float4)(0.0f);

  float4 ra[CHUNKS_A], rb[CHUNKS_B];
  const uint slices = (k + TK - 1) / TK;
  // A block wholly inside C with both operands 4-aligned fetches every slice wholly inside k
  // unchecked: one vector load a chunk, no bounds tests in the loop (they were about a sixth of its
  // instructions at 64x64x16 r8x4). Edge blocks and a partial last slice test every chunk.
  const uint unchecked_slices = vec_a && vec_b && row0 + TM <= m && col0 + TN <= n ? k / TK : 0;
  if (slices > 0) {
    direct_fetch_slice(ra, rb, a_base, b_base, ta, tb, vec_a, vec_b, lda, ldb, m, n, k, row0, col0, 0, lid, 1);
    direct_stash_slice(as_all, bs_all, ra, rb, ta, tb, lid);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = 0; s < slices; ++s) {
    const bool more = s + 1 < slices;  // uniform: every barrier below is reached by the whole group
    if (more && s + 1 < unchecked_slices) {
      direct_fetch_slice(ra, rb, a_base, b_base, ta, tb, vec_a, vec_b, lda, ldb, m, n, k, row0, col0, (s + 1) * TK,
                         lid, 0);
    } else if (more) {
      direct_fetch_slice(ra, rb, a_base, b_base, ta, tb, vec_a, vec_b, lda, ldb, m, n, k, row0, col0, (s + 1) * TK,
                         lid, 1);
    }
    __local const float* as = as_all + (s & 1) * (TK * LA);
    __local const float* bs = bs_all + (s & 1) * (TK * LB);
    DIRECT_K_RUN_PRAGMA
    for (uint k_run = 0; k_run < TK; k_run += KU) {
#pragma unroll
      for (uint kk = k_run; kk < k_run + KU; ++kk) {
        float4 av[WM / 4], bv[WN / 4];
#pragma unroll
        for (uint i = 0; i < WM / 4; ++i) av[i] = *(__local const float4*)(as + kk * LA + i * NY * 4 + ty * 4);
#pragma unroll
        for (uint j = 0; j < WN / 4; ++j) bv[j] = *(__local const float4*)(bs + kk * LB + j * NX * 4 + tx * 4);
#pragma unroll
        for (uint i = 0; i < WM; ++i) {
          const float4 a = (float4)(direct_lane(av[i / 4], i % 4));
#pragma unroll
          for (uint j = 0; j < WN / 4; ++j) acc[i][j] = fma(a, bv[j], acc[i][j]);
        }
      }
    }
    if (more) {
      direct_stash_slice(as_all + ((s + 1) & 1) * (TK * LA), bs_all + ((s + 1) & 1) * (TK * LB), ra, rb, ta, tb, lid);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  __global act_t* cb = c + c_offset + (size_t)get_group_id(2) * c_stride;
#pragma unroll
  for (uint i = 0; i < WM; ++i) {
    const uint row = row0 + i / 4 * NY * 4 + ty * 4 + i % 4;
    if (row >= m) continue;
#pragma unroll
    for (uint j = 0; j < WN; ++j) {
      const uint col = col0 + j / 4 * NX * 4 + tx * 4 + j % 4;
      if (col >= n) continue;
      gemm_store(cb, ldc, row, col, alpha * direct_lane(acc[i][j / 4], j % 4), beta, bias, aux, ld_aux, epilogue);
    }
  }
}

#define PAX_GEMM_DIRECT_KERNEL(NAME, TA, TB)                                                                        \
  __kernel __attribute__((reqd_work_group_size(NX, NY, 1))) void NAME(                                             \
      __global act_t* c, const uint c_offset, const uint ldc, const uint c_stride, __global const a_t* a,          \
      const uint a_offset, const uint lda, const uint a_stride, __global const b_t* b, const uint b_offset,        \
      const uint ldb, const uint b_stride, const uint m, const uint n, const uint k, const float alpha,            \
      const float beta, const uint vec_a, const uint vec_b, __global const act_t* bias, const uint bias_offset,     \
      __global act_t* aux, const uint aux_offset, const uint ld_aux, const uint epilogue) {                        \
    __local float4 as4[2 * TK * LA / 4], bs4[2 * TK * LB / 4]; /* float4: 16-byte aligned */                       \
    const size_t batch = get_group_id(2);                                                                          \
    gemm_direct(c, c_offset, ldc, c_stride, a + a_offset + batch * a_stride, lda, b + b_offset + batch * b_stride, \
                ldb, m, n, k, alpha, beta, vec_a, vec_b, TA, TB, (__local float*)as4, (__local float*)bs4,         \
                bias + bias_offset, aux + aux_offset, ld_aux, epilogue);                                           \
  }

PAX_GEMM_DIRECT_KERNEL(gemm_direct_nn, 0, 0)
PAX_GEMM_DIRECT_KERNEL(gemm_direct_nt, 0, 1)
PAX_GEMM_DIRECT_KERNEL(gemm_direct_tn, 1, 0)
PAX_GEMM_DIRECT_KERNEL(gemm_direct_tt, 1, 1)
