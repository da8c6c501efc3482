// Causal flash attention (FlashAttention-2's scheme) for the GPU set; a program of its own, built
// per head size and tiles (kernels_cl/flash_attention.h chooses them). One sequence b, query head h,
// kv head h / group (grouped-query attention: `group` query heads share a kv head).
//   q    element (b, t, h, d)   at q[(b*queries + t)*q_stride + h*HS + d]        act_t
//   k, v element (b, u, kvh, d) at kv[(b*kv_rows + u)*kv_stride + k_col|v_col + kvh*HS + d]
//   out / dq like q (out_stride / q_stride), dk, dv like k, v
//   lse, delta (b, h, position) at [(b*H + h)*stats_stride + p0 + t]                float
// Query t sits at position p0 + t and attends keys 0 .. p0 + t (p0 > 0: decoding against a cache).
//
// Register tiles, as a GEMM's: a work-group of FA_WG work-items is a (FA_TR, FA_TC) grid. It owns
// BR rows (queries in the forward and dq kernels, keys in dk/dv) and streams tiles of BC rows of the
// other side through local memory. Work-item (tr, tc) holds rows tr + FA_TR*i (i < BR / FA_TR) of
// every per-tile product, score columns tc + FA_TC*j (j < BC / FA_TC) and head dims tc + FA_TC*j
// (j < FA_DN) of every accumulator, so each value it loads from local memory feeds several FMAs
// (the one-row-per-lane version did one FMA per two loads and reached about 3 TFLOP/s on an H100).
// A row's statistics are combined over its FA_TC lanes in lane order and every dot product runs
// over d or c in order: each sum has one fixed order and a step is bit-reproducible. Scores and
// accumulators are float; no (T, T) tensor exists anywhere: the forward keeps only the log-sum-exp,
// the backward recomputes the probabilities tile by tile. Tiles wholly above the diagonal are never
// visited. Each kernel has its own tile (FWD_*, DQ_*, KV_*): the backward ones hold more in local
// memory per row.
// scripts/check_ptx.sh builds (the tiles flash_tiles picks for GPT-2's and LLaMA-7B's heads at PAX_WG 256):
// check_ptx: -DHS=64 -DFA_WG=128 -DFWD_BR=64 -DFWD_BC=32 -DDQ_BR=32 -DDQ_BC=32 -DKV_BR=32 -DKV_BC=32
// check_ptx: -DHS=128 -DFA_WG=128 -DFWD_BR=32 -DFWD_BC=16 -DDQ_BR=32 -DDQ_BC=8 -DKV_BR=16 -DKV_BC=16

#ifndef HS
#define HS 64  // head size (the launcher always sets every macro; these defaults are check_ptx's)
#endif
#ifndef FA_WG
#define FA_WG 128
#endif
#ifndef FWD_BR
#define FWD_BR 64
#define FWD_BC 32
#define DQ_BR 32
#define DQ_BC 32
#define KV_BR 32
#define KV_BC 32
#endif
#define FA_TC 8                              // work-items per row (kernels_cl/flash_attention.h: kFlashLanes)
#define FA_TR (FA_WG / FA_TC)                // rows of work-items
#define FA_DN ((HS + FA_TC - 1) / FA_TC)     // head dims per work-item
// Vector reads from local memory: with HS a multiple of 4 the dot products over head dims read
// float4s (16-byte aligned tile rows, padded by 4 floats so that 8 consecutive rows start in 8
// different groups of 4 banks), and with HS a multiple of 4 * FA_TC each work-item's head dims come
// in runs of 4 (dims 4*tc + 4*FA_TC*g + e), so the P V-style products read float4s of both sides.
// Every sum keeps its order (over d, or over c), whichever form runs.
// Building with -DFA_VEC_DOTS=0 -DFA_VEC_DIMS=0 keeps the scalar reads (PAX_OCL_FLASH_VECTOR_READS=0,
// to measure one form against the other on a GPU).
#ifndef FA_VEC_DOTS
#define FA_VEC_DOTS (HS % 4 == 0)
#endif
#ifndef FA_VEC_DIMS
#define FA_VEC_DIMS (HS % (4 * FA_TC) == 0)
#endif
#if FA_VEC_DIMS && !FA_VEC_DOTS
#error "FA_VEC_DIMS reads float4s of tile rows: it needs FA_VEC_DOTS's 16-byte aligned rows"
#endif
#if FA_VEC_DOTS
#define FA_LD (HS + 4)                       // a tile row in local memory, padded against bank conflicts
#else
#define FA_LD (HS + 1)
#endif
#define FA_PITCH(BC) ((BC) + 4)              // a row of a (rows, BC) probability tile, padded likewise
#define FA_LOCAL __local __attribute__((aligned(16)))
#if FA_VEC_DIMS
#define FA_DIM(tc, j) (4 * (tc) + 4 * FA_TC * ((j) >> 2) + ((j) & 3))  // head dim of accumulator j of lane tc
#else
#define FA_DIM(tc, j) ((tc) + FA_TC * (j))
#endif
// Scores in log2 units: exp2 is one instruction where exp needs a range reduction first. The
// forward and dq fold log2(e) into q's scale; lse stays natural (ln 2 (max + log2 sum)).
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
#define FA_KERNEL __kernel __attribute__((reqd_work_group_size(FA_WG, 1, 1)))
// Helpers inlined always, and every loop over a register array (scores, accumulators, row
// statistics) unrolled: an array indexed by a loop that is not unrolled lives in local memory (the
// stack), and its loads and stores run in every tile of the main loop (ptxas reported 480 bytes of
// stack in the forward with plain `inline` and compiler-chosen unrolling; scripts/check_ptx.sh now
// fails on a stack frame over 16 bytes).
#define FA_FN static inline __attribute__((always_inline))
// for (i = 0; i < n; ++i) in a helper, where n (rm, nc) is a constant only once the helper is
// inlined: a loop to the constant bound MAX, unrolled, whose body runs while i < n. Compilers
// optimise a helper on its own before inlining it (bottom-up), and a loop to a runtime n is then
// unrolled partly or not at all; the arrays it indexes stay on the stack after inlining.
#define FA_FOR_UPTO(i, n, MAX) _Pragma("unroll") for (uint i = 0; i < (MAX); ++i) if (i < (n))

#if FA_WG % FA_TC != 0 || FWD_BR % FA_TR != 0 || DQ_BR % FA_TR != 0 || KV_BR % FA_TR != 0 || \
    FWD_BC % FA_TC != 0 || DQ_BC % FA_TC != 0 || KV_BC % FA_TC != 0
#error "flash attention tiles: rows a multiple of FA_WG / FA_TC, columns a multiple of FA_TC"
#endif
#define FA_RM_MAX 8     // rows per work-item, at most (flash_tiles keeps to it)
#define FA_NC_MAX 8     // score columns per work-item, at most
#define FA_ROWS_MAX 64  // rows of any tile, at most (flash_tiles keeps to it)
#if FWD_BR / FA_TR > FA_RM_MAX || DQ_BR / FA_TR > FA_RM_MAX || KV_BR / FA_TR > FA_RM_MAX || \
    FWD_BC / FA_TC > FA_NC_MAX || DQ_BC / FA_TC > FA_NC_MAX || KV_BC / FA_TC > FA_NC_MAX ||  \
    FWD_BR > FA_ROWS_MAX || DQ_BR > FA_ROWS_MAX || KV_BR > FA_ROWS_MAX || FWD_BC > FA_ROWS_MAX || \
    DQ_BC > FA_ROWS_MAX || KV_BC > FA_ROWS_MAX
#error "flash attention tiles: at most FA_RM_MAX rows and FA_NC_MAX score columns per work-item, FA_ROWS_MAX rows a tile (FA_FOR_UPTO's bounds)"
#endif
#define FA_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

// rows x HS elements of act_t rows `stride` apart from `src` into a padded float tile, times
// `scale`; rows at or past `live` read as 0. Every work-item of the group calls it. The copy runs
// a constant number of times per work-item, unrolled (FA_FOR_UPTO): a loop from the local id in
// steps of FA_WG has a trip count the compiler cannot know, and its remainder handling was about
// a third of the dq kernel's code per tile.
FA_FN void fa_load_tile(__local float* tile, uint rows, __global const act_t* src, size_t stride, uint live,
                        float scale) {
#if FA_VEC_DOTS
  // Runs of 4 head dims: one vector load (the host requires strides and column offsets that are
  // multiples of 4, so a run starts 4-aligned) and one 16-byte local store (the padded rows are
  // 16-byte aligned) each, a quarter of the index arithmetic of element-wise copies.
  const uint runs = rows * (HS / 4);
  FA_FOR_UPTO(n, FA_CEIL_DIV(runs, FA_WG), FA_CEIL_DIV(FA_ROWS_MAX * (HS / 4), FA_WG)) {
    const uint i = get_local_id(0) + n * FA_WG, r = i / (HS / 4), d = 4 * (i - r * (HS / 4));
    if (runs % FA_WG == 0 || i < runs)
      *(__local float4*)(tile + r * FA_LD + d) = r < live ? scale * act_load4a(src, (size_t)r * stride + d) : (float4)(0.0f);
  }
#else
  const uint elements = rows * HS;
  FA_FOR_UPTO(n, FA_CEIL_DIV(elements, FA_WG), FA_CEIL_DIV(FA_ROWS_MAX * HS, FA_WG)) {
    const uint i = get_local_id(0) + n * FA_WG, r = i / HS, d = i - r * HS;
    if (elements % FA_WG == 0 || i < elements) tile[r * FA_LD + d] = r < live ? scale * act_load(src, (size_t)r * stride + d) : 0.0f;
  }
#endif
}

// Component e of v (e < 4; a register after unrolling).
FA_FN float fa_lane(float4 v, uint e) { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; }

// s[i*nc + j] = a-row (tr + FA_TR*i) . b-row (tc + FA_TC*j) over HS dims, both padded tiles: a
// register tile of A B^T (scores, or dout v^T). nc and rm are compile-time after inlining.
FA_FN void fa_dots(float* s, uint rm, uint nc, __local const float* a, __local const float* b, uint tr,
                   uint tc) {
  FA_FOR_UPTO(i, rm, FA_RM_MAX)
    FA_FOR_UPTO(j, nc, FA_NC_MAX) s[i * nc + j] = 0.0f;
#if FA_VEC_DOTS
#pragma unroll 4  // the loop over head dims or columns: only local memory, so partly unrolled
  for (uint d = 0; d < HS; d += 4) {
    float4 av[FA_RM_MAX], bv[FA_NC_MAX];
    FA_FOR_UPTO(i, rm, FA_RM_MAX) av[i] = *(__local const float4*)(a + (tr + FA_TR * i) * FA_LD + d);
    FA_FOR_UPTO(j, nc, FA_NC_MAX) bv[j] = *(__local const float4*)(b + (tc + FA_TC * j) * FA_LD + d);
    FA_FOR_UPTO(i, rm, FA_RM_MAX)
      FA_FOR_UPTO(j, nc, FA_NC_MAX) {
        float x = s[i * nc + j];
        x = fma(av[i].x, bv[j].x, x);
        x = fma(av[i].y, bv[j].y, x);
        x = fma(av[i].z, bv[j].z, x);
        s[i * nc + j] = fma(av[i].w, bv[j].w, x);
      }
  }
#else
  for (uint d = 0; d < HS; ++d) {
    float av[FA_RM_MAX], bv[FA_NC_MAX];
    FA_FOR_UPTO(i, rm, FA_RM_MAX) av[i] = a[(tr + FA_TR * i) * FA_LD + d];
    FA_FOR_UPTO(j, nc, FA_NC_MAX) bv[j] = b[(tc + FA_TC * j) * FA_LD + d];
    FA_FOR_UPTO(i, rm, FA_RM_MAX)
      FA_FOR_UPTO(j, nc, FA_NC_MAX) s[i * nc + j] = fma(av[i], bv[j], s[i * nc + j]);
  }
#endif
}

// acc[i*FA_DN + j] += sum over c < cols of p[row_i][c] * b[c][FA_DIM(tc, j)]: rows tr + FA_TR*i of a
// (rows, pld) probability tile (cols and pld multiples of 4) and a padded tile (P V, dS K, P^T dO, ...).
FA_FN void fa_accumulate(float* acc, uint rm, __local const float* p, uint pld, uint cols,
                         __local const float* b, uint tr, uint tc) {
#if FA_VEC_DIMS
#pragma unroll 4  // the loop over head dims or columns: only local memory, so partly unrolled
  for (uint c0 = 0; c0 < cols; c0 += 4) {
    float4 pv[FA_RM_MAX];
    FA_FOR_UPTO(i, rm, FA_RM_MAX) pv[i] = *(__local const float4*)(p + (tr + FA_TR * i) * pld + c0);
#pragma unroll
    for (uint e = 0; e < 4; ++e) {
      float4 bv[FA_DN / 4];
#pragma unroll
      for (uint g = 0; g < FA_DN / 4; ++g) bv[g] = *(__local const float4*)(b + (c0 + e) * FA_LD + FA_DIM(tc, 4 * g));
      FA_FOR_UPTO(i, rm, FA_RM_MAX) {
        const float pe = fa_lane(pv[i], e);
#pragma unroll
        for (uint g = 0; g < FA_DN / 4; ++g) {
          float* x = acc + i * FA_DN + 4 * g;
          x[0] = fma(pe, bv[g].x, x[0]);
          x[1] = fma(pe, bv[g].y, x[1]);
          x[2] = fma(pe, bv[g].z, x[2]);
          x[3] = fma(pe, bv[g].w, x[3]);
        }
      }
    }
  }
#else
  for (uint c = 0; c < cols; ++c) {
    float pv[FA_RM_MAX], bv[FA_DN];
    FA_FOR_UPTO(i, rm, FA_RM_MAX) pv[i] = p[(tr + FA_TR * i) * pld + c];
    // Dims past HS (HS not a multiple of FA_TC) read a live element and are never stored.
#pragma unroll
    for (uint j = 0; j < FA_DN; ++j) bv[j] = b[c * FA_LD + min((uint)FA_DIM(tc, j), (uint)HS - 1)];
    FA_FOR_UPTO(i, rm, FA_RM_MAX)
#pragma unroll
      for (uint j = 0; j < FA_DN; ++j) acc[i * FA_DN + j] = fma(pv[i], bv[j], acc[i * FA_DN + j]);
  }
#endif
}

// Each of the work-item's rm rows' value, combined over the row's FA_TC lanes in lane order
// (max or sum) through `red` (__local float[rows * FA_TC]). Every work-item calls it (it holds a
// barrier); `red` may be written again only after the caller's next barrier.
FA_FN void fa_row_combine(float* v, uint rm, bool take_max, __local float* red, uint tr, uint tc) {
  FA_FOR_UPTO(i, rm, FA_RM_MAX) red[(tr + FA_TR * i) * FA_TC + tc] = v[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  FA_FOR_UPTO(i, rm, FA_RM_MAX) {
    __local const float* lanes = red + (tr + FA_TR * i) * FA_TC;
    float x = lanes[0];
    for (uint k = 1; k < FA_TC; ++k) x = take_max ? fmax(x, lanes[k]) : x + lanes[k];
    v[i] = x;
  }
}

// The first element of sequence b, row `row`, column `col` of a (rows_per_seq, stride) act buffer.
FA_FN size_t fa_at(uint b, uint rows_per_seq, uint row, size_t stride, uint col) {
  return ((size_t)b * rows_per_seq + row) * stride + col;
}

// Stores the work-item's head dims (FA_DIM) of its rm rows (tr + FA_TR*i of a block starting at row `first`
// of sequence b in a (rows_per_seq, stride) act buffer, at column `col`); rows at or past `live`
// are not stored.
FA_FN void fa_store_rows(__global act_t* dst, const float* acc, uint rm, uint b, uint rows_per_seq, uint first,
                         size_t stride, uint col, uint live, uint tr, uint tc) {
  FA_FOR_UPTO(i, rm, FA_RM_MAX) {
    const uint r = tr + FA_TR * i;
    if (r >= live) continue;
    const size_t at = fa_at(b, rows_per_seq, first + r, stride, col);
#pragma unroll
    for (uint j = 0; j < FA_DN; ++j) {
      const uint d = FA_DIM(tc, j);
      if (d < HS) act_store(dst, at + d, acc[i * FA_DN + j]);
    }
  }
}

#define FWD_RM (FWD_BR / FA_TR)
#define FWD_NC (FWD_BC / FA_TC)
// Forward. Groups (query block, h, b): out = softmax(scale q k^T, causal) v and lse per query.
FA_KERNEL void flash_attention_forward(__global const act_t* q, const uint q_stride, __global const act_t* kv,
                                       const uint kv_stride, const uint kv_rows, const uint k_col, const uint v_col,
                                       __global act_t* out, const uint out_stride, __global float* lse,
                                       const uint stats_stride, const uint queries, const uint p0, const uint H,
                                       const uint group, const float scale) {
  FA_LOCAL float Qs[FWD_BR * FA_LD], Ks[FWD_BC * FA_LD], Vs[FWD_BC * FA_LD], Ps[FWD_BR * FA_PITCH(FWD_BC)];
  __local float red_max[FWD_BR * FA_TC], red_sum[FWD_BR * FA_TC];
  const uint lid = get_local_id(0), tr = lid / FA_TC, tc = lid - tr * FA_TC;
  const uint t0 = get_group_id(0) * FWD_BR, h = get_group_id(1), b = get_group_id(2), kvh = h / group;
  const uint live_rows = min((uint)FWD_BR, queries - t0);
  const uint last_key = p0 + t0 + live_rows - 1;  // the block's last query reaches it
  // q pre-scaled by scale log2(e): the tile's dot products are the scaled scores in log2 units.
  fa_load_tile(Qs, FWD_BR, q + fa_at(b, queries, t0, q_stride, h * HS), q_stride, live_rows, scale * LOG2E);
  __global const act_t* keys = kv + fa_at(b, kv_rows, 0, kv_stride, k_col + kvh * HS);
  __global const act_t* values = kv + fa_at(b, kv_rows, 0, kv_stride, v_col + kvh * HS);

  float o[FWD_RM * FA_DN], m[FWD_RM], l[FWD_RM];
#pragma unroll
  for (uint i = 0; i < FWD_RM * FA_DN; ++i) o[i] = 0.0f;
#pragma unroll
  for (uint i = 0; i < FWD_RM; ++i) m[i] = -INFINITY, l[i] = 0.0f;
  for (uint u0 = 0; u0 <= last_key; u0 += FWD_BC) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads of Ks, Vs and Ps are done
    const uint keys_live = min((uint)FWD_BC, last_key + 1 - u0);
    fa_load_tile(Ks, FWD_BC, keys + (size_t)u0 * kv_stride, kv_stride, keys_live, 1.0f);
    fa_load_tile(Vs, FWD_BC, values + (size_t)u0 * kv_stride, kv_stride, keys_live, 1.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    float s[FWD_RM * FWD_NC], m_new[FWD_RM], m_safe[FWD_RM], part[FWD_RM];
    fa_dots(s, FWD_RM, FWD_NC, Qs, Ks, tr, tc);
    // Tiles wholly below the diagonal (every row live, every key at or before the first query)
    // mask nothing: with 64-query blocks and 32-key tiles, all but a block's 2 diagonal tiles
    // (240 of a head's 272 at T1024).
    const bool masked = live_rows < FWD_BR || u0 + FWD_BC > p0 + t0 + 1;  // uniform
    if (masked) {
#pragma unroll
      for (uint i = 0; i < FWD_RM; ++i) {
        const uint r = tr + FA_TR * i, position = p0 + t0 + r;
#pragma unroll
        for (uint j = 0; j < FWD_NC; ++j)
          if (r >= live_rows || u0 + tc + FA_TC * j > position) s[i * FWD_NC + j] = -INFINITY;
      }
    }
#pragma unroll
    for (uint i = 0; i < FWD_RM; ++i) {
      m_new[i] = -INFINITY;
#pragma unroll
      for (uint j = 0; j < FWD_NC; ++j) m_new[i] = fmax(m_new[i], s[i * FWD_NC + j]);
    }
    fa_row_combine(m_new, FWD_RM, true, red_max, tr, tc);
#pragma unroll
    for (uint i = 0; i < FWD_RM; ++i) {
      m_new[i] = fmax(m[i], m_new[i]);
      // A row with no live key yet (a dead row) keeps m = -inf; subtracting 0 instead makes every
      // p and alpha exp2(-inf) = 0 with no test per score (its o and l are 0 either way).
      m_safe[i] = m_new[i] == -INFINITY ? 0.0f : m_new[i];
      part[i] = 0.0f;
#pragma unroll
      for (uint j = 0; j < FWD_NC; ++j) {
        const float p = exp2(s[i * FWD_NC + j] - m_safe[i]);
        Ps[(tr + FA_TR * i) * FA_PITCH(FWD_BC) + tc + FA_TC * j] = p;
        part[i] += p;
      }
    }
    fa_row_combine(part, FWD_RM, false, red_sum, tr, tc);  // its barrier also publishes Ps
#pragma unroll
    for (uint i = 0; i < FWD_RM; ++i) {
      const float alpha = exp2(m[i] - m_safe[i]);
      l[i] = l[i] * alpha + part[i];
      m[i] = m_new[i];
#pragma unroll
      for (uint j = 0; j < FA_DN; ++j) o[i * FA_DN + j] *= alpha;
    }
    fa_accumulate(o, FWD_RM, Ps, FA_PITCH(FWD_BC), FWD_BC, Vs, tr, tc);
  }
#pragma unroll
  for (uint i = 0; i < FWD_RM; ++i) {
    const uint r = tr + FA_TR * i;
    if (r < live_rows && tc == 0) lse[((size_t)b * H + h) * stats_stride + p0 + t0 + r] = LN2 * (m[i] + log2(l[i]));
    const float inv = 1.0f / l[i];  // a dead row's inf is never stored
#pragma unroll
    for (uint j = 0; j < FA_DN; ++j) o[i * FA_DN + j] *= inv;
  }
  fa_store_rows(out, o, FWD_RM, b, queries, t0, out_stride, h * HS, live_rows, tr, tc);
}

#define DQ_RM (DQ_BR / FA_TR)
#define DQ_NC (DQ_BC / FA_TC)
// Backward, dq; runs first. Groups (query block, h, b) over sequences of T tokens (p0 = 0, k and v
// in qkv; out and dout (B*T, dout_stride)):
//   delta = dout.out per query (written for the dk/dv kernel), p = exp(scale q.k - lse)
//   (= exp2(scale log2(e) q.k - log2(e) lse)), ds = p (dout.v - delta), dq = scale * sum_u ds k.
FA_KERNEL void flash_attention_backward_dq(__global const act_t* qkv, const uint width, const uint k_col,
                                           const uint v_col, __global const act_t* out, __global const act_t* dout,
                                           const uint dout_stride, __global const float* lse,
                                           __global float* delta, __global act_t* dqkv, const uint T, const uint H,
                                           const uint group, const float scale) {
  FA_LOCAL float Qs[DQ_BR * FA_LD], dOs[DQ_BR * FA_LD], Ks[DQ_BC * FA_LD], Vs[DQ_BC * FA_LD], dSs[DQ_BR * FA_PITCH(DQ_BC)];
  __local float red[DQ_BR * FA_TC];
  const uint lid = get_local_id(0), tr = lid / FA_TC, tc = lid - tr * FA_TC;
  const uint t0 = get_group_id(0) * DQ_BR, h = get_group_id(1), b = get_group_id(2), kvh = h / group;
  const uint live_rows = min((uint)DQ_BR, T - t0);
  fa_load_tile(Qs, DQ_BR, qkv + fa_at(b, T, t0, width, h * HS), width, live_rows, scale * LOG2E);
  fa_load_tile(dOs, DQ_BR, dout + fa_at(b, T, t0, dout_stride, h * HS), dout_stride, live_rows, 1.0f);
  barrier(CLK_LOCAL_MEM_FENCE);
  // delta: each lane's head dims, then the lanes in order.
  float row_delta[DQ_RM], row_lse2[DQ_RM];
  size_t stat[DQ_RM];
#pragma unroll
  for (uint i = 0; i < DQ_RM; ++i) {
    const uint r = tr + FA_TR * i;
    stat[i] = ((size_t)b * H + h) * T + min(t0 + r, T - 1);
    row_lse2[i] = lse[stat[i]] * LOG2E;
    row_delta[i] = 0.0f;
    if (r >= live_rows) continue;
    const size_t at = fa_at(b, T, t0 + r, dout_stride, h * HS);
    for (uint d = tc; d < HS; d += FA_TC) row_delta[i] += dOs[r * FA_LD + d] * act_load(out, at + d);
  }
  fa_row_combine(row_delta, DQ_RM, false, red, tr, tc);
#pragma unroll
  for (uint i = 0; i < DQ_RM; ++i)
    if (tr + FA_TR * i < live_rows && tc == 0) delta[stat[i]] = row_delta[i];
  __global const act_t* keys = qkv + fa_at(b, T, 0, width, k_col + kvh * HS);
  __global const act_t* values = qkv + fa_at(b, T, 0, width, v_col + kvh * HS);
  const uint last_key = t0 + live_rows - 1;

  float dq[DQ_RM * FA_DN];
#pragma unroll
  for (uint i = 0; i < DQ_RM * FA_DN; ++i) dq[i] = 0.0f;
  for (uint u0 = 0; u0 <= last_key; u0 += DQ_BC) {
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint keys_live = min((uint)DQ_BC, last_key + 1 - u0);
    fa_load_tile(Ks, DQ_BC, keys + (size_t)u0 * width, width, keys_live, 1.0f);
    fa_load_tile(Vs, DQ_BC, values + (size_t)u0 * width, width, keys_live, 1.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    float s[DQ_RM * DQ_NC], dp[DQ_RM * DQ_NC];
    fa_dots(s, DQ_RM, DQ_NC, Qs, Ks, tr, tc);
    fa_dots(dp, DQ_RM, DQ_NC, dOs, Vs, tr, tc);
    const bool masked = live_rows < DQ_BR || u0 + DQ_BC > t0 + 1;  // uniform; as the forward's
#pragma unroll
    for (uint i = 0; i < DQ_RM; ++i) {
      const uint r = tr + FA_TR * i;
#pragma unroll
      for (uint j = 0; j < DQ_NC; ++j) {
        const uint c = tc + FA_TC * j;
        // Masked scores are finite (zero rows and keys past the live ones), so the product is
        // computed everywhere and selected: exp2 may overflow above the diagonal, never NaN a kept one.
        const float ds = exp2(s[i * DQ_NC + j] - row_lse2[i]) * (dp[i * DQ_NC + j] - row_delta[i]);
        dSs[r * FA_PITCH(DQ_BC) + c] = !masked || (r < live_rows && u0 + c <= t0 + r) ? ds : 0.0f;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    fa_accumulate(dq, DQ_RM, dSs, FA_PITCH(DQ_BC), DQ_BC, Ks, tr, tc);
  }
#pragma unroll
  for (uint i = 0; i < DQ_RM * FA_DN; ++i) dq[i] *= scale;
  fa_store_rows(dqkv, dq, DQ_RM, b, T, t0, width, h * HS, live_rows, tr, tc);
}

#define KV_RM (KV_BR / FA_TR)
#define KV_NC (KV_BC / FA_TC)
// Backward, dk and dv, after dq (which wrote delta; out is unused, the arguments are dq's). Groups
// (key block, kv head, b); each sums over the `group` query heads of its kv head and the query
// tiles at or below the diagonal, in that fixed order, in float registers (no atomics; 16-bit dk,
// dv rounded once). With s^T = k (scale q)^T and dp^T = v dout^T per tile:
//   dv = sum_t p^T dout,  dk = sum_t ds^T (scale q),  ds^T = p^T (dp^T - delta),
//   p^T = exp2(log2(e) s^T - log2(e) lse).
FA_KERNEL void flash_attention_backward_dkdv(__global const act_t* qkv, const uint width, const uint k_col,
                                             const uint v_col, __global const act_t* out,
                                             __global const act_t* dout, const uint dout_stride,
                                             __global const float* lse, __global const float* delta,
                                             __global act_t* dqkv, const uint T, const uint H, const uint group,
                                             const float scale) {
  FA_LOCAL float Ks[KV_BR * FA_LD], Vs[KV_BR * FA_LD], Qs[KV_BC * FA_LD], dOs[KV_BC * FA_LD];
  FA_LOCAL float Ps[KV_BR * FA_PITCH(KV_BC)], dSs[KV_BR * FA_PITCH(KV_BC)];
  __local float lse_s[KV_BC], delta_s[KV_BC];
  const uint lid = get_local_id(0), tr = lid / FA_TC, tc = lid - tr * FA_TC;
  const uint u_first = get_group_id(0) * KV_BR, kvh = get_group_id(1), b = get_group_id(2);
  const uint live_rows = min((uint)KV_BR, T - u_first);
  fa_load_tile(Ks, KV_BR, qkv + fa_at(b, T, u_first, width, k_col + kvh * HS), width, live_rows, 1.0f);
  fa_load_tile(Vs, KV_BR, qkv + fa_at(b, T, u_first, width, v_col + kvh * HS), width, live_rows, 1.0f);

  float dk[KV_RM * FA_DN], dv[KV_RM * FA_DN];
#pragma unroll
  for (uint i = 0; i < KV_RM * FA_DN; ++i) dk[i] = dv[i] = 0.0f;
  for (uint j = 0; j < group; ++j) {
    const uint h = kvh * group + j;
    __global const float* head_lse = lse + ((size_t)b * H + h) * T;
    __global const float* head_delta = delta + ((size_t)b * H + h) * T;
    // The first query tile that reaches this block's first key: queries t >= u_first.
    for (uint t0 = u_first - u_first % KV_BC; t0 < T; t0 += KV_BC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      const uint queries_live = min((uint)KV_BC, T - t0);
      fa_load_tile(Qs, KV_BC, qkv + fa_at(b, T, t0, width, h * HS), width, queries_live, scale);
      fa_load_tile(dOs, KV_BC, dout + fa_at(b, T, t0, dout_stride, h * HS), dout_stride, queries_live, 1.0f);
      for (uint c = lid; c < KV_BC; c += FA_WG) {
        lse_s[c] = c < queries_live ? head_lse[t0 + c] * LOG2E : 0.0f;
        delta_s[c] = c < queries_live ? head_delta[t0 + c] : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      float s[KV_RM * KV_NC], dp[KV_RM * KV_NC];
      fa_dots(s, KV_RM, KV_NC, Ks, Qs, tr, tc);
      fa_dots(dp, KV_RM, KV_NC, Vs, dOs, tr, tc);
      // Wholly below the diagonal (every key live, every query live and at or after the last key):
      // nothing masked. Elsewhere masked scores are finite and selected away, as in dq.
      const bool masked = live_rows < KV_BR || queries_live < KV_BC || u_first + KV_BR > t0 + 1;  // uniform
#pragma unroll
      for (uint i = 0; i < KV_RM; ++i) {
        const uint r = tr + FA_TR * i;
#pragma unroll
        for (uint jc = 0; jc < KV_NC; ++jc) {
          const uint c = tc + FA_TC * jc;
          const bool live = !masked || (r < live_rows && c < queries_live && u_first + r <= t0 + c);
          const float p = exp2(fma(s[i * KV_NC + jc], LOG2E, -lse_s[c]));
          Ps[r * FA_PITCH(KV_BC) + c] = live ? p : 0.0f;
          dSs[r * FA_PITCH(KV_BC) + c] = live ? p * (dp[i * KV_NC + jc] - delta_s[c]) : 0.0f;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      fa_accumulate(dv, KV_RM, Ps, FA_PITCH(KV_BC), KV_BC, dOs, tr, tc);
      fa_accumulate(dk, KV_RM, dSs, FA_PITCH(KV_BC), KV_BC, Qs, tr, tc);
    }
  }
  fa_store_rows(dqkv, dk, KV_RM, b, T, u_first, width, k_col + kvh * HS, live_rows, tr, tc);
  fa_store_rows(dqkv, dv, KV_RM, b, T, u_first, width, v_col + kvh * HS, live_rows, tr, tc);
}
