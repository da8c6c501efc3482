// Causal flash attention on tensor cores (FlashAttention-2's scheme on mma.sync m16n8k16) for 16-bit
// activations: the same three kernels, arguments and results as flash_attention_gpu.cl (its header
// has the layouts), chosen by kernels_cl/flash_attention.h where the tensor-core probe passed for the
// activation dtype. mma_ops.cl (prepended) has the instructions and their emulation; act_t is the
// operand dtype (-DPAX_ACT_BF16 with -DMMA_AB_BF16, or the float16 pair).
//
// A work-group is WARPS warps; each warp owns 16 rows (queries in the forward and dq kernels, keys in
// dk/dv), so a group owns BR = 16 WARPS rows, and streams tiles of BC rows of the other side through
// local memory. Products are 16 x 8 accumulator fragments in registers (float32); the operands are
// the act_t tiles as stored, read with ldmatrix. The probabilities and dS are rounded to act_t once
// to enter the next product (as FlashAttention-2 does), everything else stays float32: the scores,
// the running max and sum, the log-sum-exp, delta and the accumulators. A row's max and sum combine
// over the four lanes that hold it by butterfly shuffles, each dot product runs over d or over the
// tile in one order: a step stays bit-reproducible. Tiles wholly above the diagonal are never
// visited; no (T, T) tensor exists.
// scripts/check_ptx.sh builds (the tiles flash_mma_tiles picks for head sizes 64 and 128):
// check_ptx: -DHS=64 -DFWD_WARPS=4 -DFWD_BC=64 -DDQ_WARPS=4 -DDQ_BC=64 -DKV_WARPS=4 -DKV_BC=32
// check_ptx: -DHS=128 -DFWD_WARPS=4 -DFWD_BC=32 -DDQ_WARPS=2 -DDQ_BC=32 -DKV_WARPS=2 -DKV_BC=16

#if MMA_TF32
#error "flash_attention_mma.cl: 16-bit operands only (-DMMA_AB_BF16 or -DMMA_AB_F16)"
#endif
#ifndef HS
#define HS 64
#define FWD_WARPS 4
#define FWD_BC 64
#define DQ_WARPS 4
#define DQ_BC 64
#define KV_WARPS 4
#define KV_BC 32
#endif
#if HS % 16 || FWD_BC % 16 || DQ_BC % 16 || KV_BC % 16
#error "flash_attention_mma.cl: HS and every BC a multiple of 16"
#endif
#define LDS (HS + 8)  // a tile row in local memory: 16 bytes of padding put ldmatrix's 8 rows on distinct banks
#define HF (HS / 8)   // 8-wide fragments across the head dims
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
#if defined(PAX_NVIDIA_PTX)
#define FA_EXP2 native_exp2  // ex2.approx: the row max is subtracted first, so arguments are <= 0
#else
#define FA_EXP2 exp2
#endif
#define TILE_LOCAL __local __attribute__((aligned(16)))
#if defined(PAX_MMA_EMULATE)
#define XCH(threads) __local uint xch[(threads) * 8];
#else
#define XCH(threads) __local uint* xch = 0;
#endif

// rows x HS act_t elements, rows `stride` apart from src, into a padded local tile; rows at or past
// `live` are zeros. `aligned`: every row starts 16-byte aligned, so 16-byte copies.
MMA_FN void fa_tile(__local ushort* dst, uint rows, __global const ushort* src, size_t stride, uint live, bool aligned,
                    uint threads) {
  for (uint i = get_local_id(0); i < rows * HF; i += threads) {
    const uint r = i / HF, c = (i - r * HF) * 8;
    __local ushort* d = dst + r * LDS + c;
    if (r >= live) {
      *(__local uint4*)d = (uint4)(0u);
    } else if (aligned) {
      *(__local uint4*)d = *(__global const uint4*)(src + r * stride + c);
    } else {
      for (uint e = 0; e < 8; ++e) d[e] = src[r * stride + c + e];
    }
  }
}

// A fragment (16 x 16) of rows row0.. and columns k0.. of a tile stored (row, k).
MMA_FN void fa_a(uint a[4], __local const ushort* tile, uint row0, uint k0, __local uint* xch) {
  const uint lane = get_local_id(0) % 32;
  ldmatrix_x4(a, tile, (row0 + lane % 16) * LDS + k0 + lane / 16 * 8, false, xch);
}
// Two B fragments (16 x 8: columns n0.. and n0 + 8..) of k0.. from a tile stored (n, k): K in q k^T.
MMA_FN void fa_b_nk(uint b[2][2], __local const ushort* tile, uint n0, uint k0, __local uint* xch) {
  const uint lane = get_local_id(0) % 32;
  uint r[4];
  ldmatrix_x4(r, tile, (n0 + lane / 16 * 8 + lane % 8) * LDS + k0 + lane / 8 % 2 * 8, false, xch);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
// The same from a tile stored (k, n), transposed on load: V in p v.
MMA_FN void fa_b_kn(uint b[2][2], __local const ushort* tile, uint k0, uint n0, __local uint* xch) {
  const uint lane = get_local_id(0) % 32;
  uint r[4];
  ldmatrix_x4(r, tile, (k0 + lane / 8 % 2 * 8 + lane % 8) * LDS + n0 + lane / 16 * 8, true, xch);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

// acc (16 x 8 NC fragments) += a-tile rows row0.. (16 x HS) times b-tile rows^T (HS x 8 NC): both
// tiles stored with HS-long rows (q k^T, dout v^T, k q^T, v dout^T).
MMA_FN void fa_dots(float acc[][4], uint nc, __local const ushort* a_tile, uint row0, __local const ushort* b_tile,
                    __local uint* xch) {
UNROLL
  for (uint k0 = 0; k0 < HS; k0 += 16) {
    uint a[4];
    fa_a(a, a_tile, row0, k0, xch);
UNROLL
    for (uint j = 0; j < nc; j += 2) {
      // Zeroed here, in the unrolled body, not in a loop of its own: clang turns such a loop over a
      // parameter-sized array into a memset and leaves the fragments in local (stack) memory.
      if (k0 == 0)
UNROLL
        for (uint e = 0; e < 4; ++e) acc[j][e] = acc[j + 1][e] = 0.0f;
      uint b[2][2];
      fa_b_nk(b, b_tile, j * 8, k0, xch);
      mma_16816(acc[j], a, b[0], xch);
      mma_16816(acc[j + 1], a, b[1], xch);
    }
  }
}

// acc (16 x HS) += p (16 x 8 nc, accumulator fragments, rounded to act_t here) times the tile
// (8 nc rows of HS, stored (k, n)): p v, p^T dout, ds k, ds^T q. An accumulator fragment pair
// (columns 16 kk.. and 16 kk + 8..) is exactly the A fragment of the 16-deep step kk.
MMA_FN void fa_accumulate(float acc[HF][4], float p[][4], uint nc, __local const ushort* tile, __local uint* xch) {
UNROLL
  for (uint kk = 0; kk < nc / 2; ++kk) {
    const uint a[4] = {mma_pack(p[2 * kk][0], p[2 * kk][1]), mma_pack(p[2 * kk][2], p[2 * kk][3]),
                       mma_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]), mma_pack(p[2 * kk + 1][2], p[2 * kk + 1][3])};
UNROLL
    for (uint n = 0; n < HF; n += 2) {
      uint b[2][2];
      fa_b_kn(b, tile, kk * 16, n * 8, xch);
      mma_16816(acc[n], a, b[0], xch);
      mma_16816(acc[n + 1], a, b[1], xch);
    }
  }
}

// The four lanes holding a row (lane / 4 equal) combined: all four get the same bits.
MMA_FN float fa_quad_max(float v, __local uint* xch) {
  v = fmax(v, shfl_xor(v, 1, xch));
  return fmax(v, shfl_xor(v, 2, xch));
}
MMA_FN float fa_quad_sum(float v, __local uint* xch) {
  v += shfl_xor(v, 1, xch);
  return v + shfl_xor(v, 2, xch);
}

// Stores acc * factor (16 x HS at rows row0.. of the warp; a fragment's element e sits at row
// g + 8 (e / 2), column 2 t + e % 2) into rows of `dst` `stride` apart; rows at or past `live` are
// not stored.
MMA_FN void fa_store(__global act_t* dst, size_t stride, float acc[HF][4], float factor0, float factor1, uint row0,
                     uint live) {
  const uint lane = get_local_id(0) % 32, g = lane / 4, t = lane % 4;
UNROLL
  for (uint n = 0; n < HF; ++n)
UNROLL
    for (uint e = 0; e < 4; ++e) {
      const uint r = row0 + g + e / 2 * 8;
      if (r < live) act_store(dst, r * stride + n * 8 + 2 * t + e % 2, acc[n][e] * (e < 2 ? factor0 : factor1));
    }
}

// Element i of a local act_t tile, as act_load converts it.
MMA_FN float fa_local_load(__local const ushort* tile, uint i) {
#if defined(PAX_ACT_BF16)
  return pax_bf16_to_float(tile[i]);
#else
  return vload_half(i, (__local const half*)tile);
#endif
}

// Whether every row of q, k, v, out and dout starts 16-byte aligned (strides and columns multiples of 8).
MMA_FN bool fa_aligned(uint a, uint b, uint c, uint d, uint e) { return ((a | b | c | d | e) & 7u) == 0; }

// Tiles wholly below the diagonal (every row of the block live, every key of the tile at or before
// every row's position: most tiles of a long sequence) need no mask, and the three kernels' helpers
// below take `masked` as a constant at each call, so that the compiler builds the unmasked tile
// without the per-score tests. The two forms compute the same bits wherever both apply.

// The forward's online softmax over one key tile for this lane's two rows (rows[i] of the block,
// the query at position first + rows[i]): the scores s of keys u0.. become probabilities
// exp2(scale2 s - m); m and l, the rows' running maxima and sums, move on; alpha[i] is the factor
// row i's accumulators take.
MMA_FN void fa_forward_softmax(float (*s)[4], float* m, float* l, float* alpha, const bool masked, const uint* rows,
                               const uint live_rows, const uint u0, const uint first, const uint t, const float scale2,
                               __local uint* xch) {
  float m_new[2] = {-INFINITY, -INFINITY};
UNROLL
  for (uint j = 0; j < FWD_BC / 8; ++j)
UNROLL
    for (uint e = 0; e < 4; ++e) {
      const uint r = rows[e / 2], u = u0 + j * 8 + 2 * t + e % 2;
      const float x = !masked || (r < live_rows && u <= first + r) ? s[j][e] * scale2 : -INFINITY;
      s[j][e] = x;
      m_new[e / 2] = fmax(m_new[e / 2], x);
    }
UNROLL
  for (uint i = 0; i < 2; ++i) {
    m_new[i] = fmax(m[i], fa_quad_max(m_new[i], xch));
    // A row with no live key yet (a dead row, only in a masked tile) keeps m = -inf: every p is 0.
    alpha[i] = masked && m_new[i] == -INFINITY ? 1.0f : FA_EXP2(m[i] - m_new[i]);
    m[i] = m_new[i];
    l[i] *= alpha[i];
  }
UNROLL
  for (uint j = 0; j < FWD_BC / 8; ++j)
UNROLL
    for (uint e = 0; e < 4; ++e) {
      const float x = s[j][e], p = masked && x == -INFINITY ? 0.0f : FA_EXP2(x - m[e / 2]);
      s[j][e] = p;
      l[e / 2] += p;
    }
}

#define FWD_THREADS (FWD_WARPS * 32)
#define FWD_BR (FWD_WARPS * 16)
// Forward. Groups (query block, h, b): out = softmax(scale q k^T, causal) v and lse per query (in
// the log2 domain inside: x = scale log2(e) s, lse = ln 2 (max + log2 sum)).
__kernel __attribute__((reqd_work_group_size(FWD_THREADS, 1, 1))) void flash_attention_forward(
    __global const ushort* q, const uint q_stride, __global const ushort* kv, const uint kv_stride, const uint kv_rows,
    const uint k_col, const uint v_col, __global act_t* out, const uint out_stride, __global float* lse,
    const uint stats_stride, const uint queries, const uint p0, const uint H, const uint group, const float scale) {
  TILE_LOCAL ushort Qs[FWD_BR * LDS];
  TILE_LOCAL ushort Ks[FWD_BC * LDS];
  TILE_LOCAL ushort Vs[FWD_BC * LDS];
  XCH(FWD_THREADS)
  const uint lane = get_local_id(0) % 32, warp = get_local_id(0) / 32, g = lane / 4, t = lane % 4;
  const uint t0 = get_group_id(0) * FWD_BR, h = get_group_id(1), b = get_group_id(2), kvh = h / group;
  const uint live_rows = min((uint)FWD_BR, queries - t0);
  const uint last_key = p0 + t0 + live_rows - 1;  // the block's last query reaches it
  const bool aligned = fa_aligned(q_stride, kv_stride, k_col, v_col, HS);
  fa_tile(Qs, FWD_BR, q + ((size_t)b * queries + t0) * q_stride + h * HS, q_stride, live_rows, aligned, FWD_THREADS);
  __global const ushort* keys = kv + (size_t)b * kv_rows * kv_stride + k_col + kvh * HS;
  __global const ushort* values = kv + (size_t)b * kv_rows * kv_stride + v_col + kvh * HS;
  const float scale2 = scale * LOG2E;
  const uint row0 = warp * 16;
  uint rows[2] = {row0 + g, row0 + g + 8};  // this lane's two rows in the block

  float o[HF][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
UNROLL
  for (uint n = 0; n < HF; ++n)
UNROLL
    for (uint e = 0; e < 4; ++e) o[n][e] = 0.0f;
  for (uint u0 = 0; u0 <= last_key; u0 += FWD_BC) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads of Ks and Vs are done (and Qs is written)
    const uint keys_live = min((uint)FWD_BC, last_key + 1 - u0);
    fa_tile(Ks, FWD_BC, keys + (size_t)u0 * kv_stride, kv_stride, keys_live, aligned, FWD_THREADS);
    fa_tile(Vs, FWD_BC, values + (size_t)u0 * kv_stride, kv_stride, keys_live, aligned, FWD_THREADS);
    barrier(CLK_LOCAL_MEM_FENCE);
    float s[FWD_BC / 8][4];
    fa_dots(s, FWD_BC / 8, Qs, row0, Ks, xch);
    float alpha[2];
    if (live_rows == FWD_BR && u0 + FWD_BC <= p0 + t0 + 1) {  // uniform: the group's first query sees every key
      fa_forward_softmax(s, m, l, alpha, false, rows, live_rows, u0, p0 + t0, t, scale2, xch);
    } else {
      fa_forward_softmax(s, m, l, alpha, true, rows, live_rows, u0, p0 + t0, t, scale2, xch);
    }
UNROLL
    for (uint n = 0; n < HF; ++n)
UNROLL
      for (uint e = 0; e < 4; ++e) o[n][e] *= alpha[e / 2];
    fa_accumulate(o, s, FWD_BC / 8, Vs, xch);
  }
  float inv[2];
UNROLL
  for (uint i = 0; i < 2; ++i) {
    l[i] = fa_quad_sum(l[i], xch);
    inv[i] = 1.0f / l[i];  // a dead row's inf is never stored
    if (rows[i] < live_rows && t == 0)
      lse[((size_t)b * H + h) * stats_stride + p0 + t0 + rows[i]] = LN2 * (m[i] + log2(l[i]));
  }
  fa_store(out + ((size_t)b * queries + t0) * out_stride + h * HS, out_stride, o, inv[0], inv[1], row0, live_rows);
}

// dq's scores of one key tile for this lane's two rows (queries t0 + rows[i]): s becomes
// ds = p (dp - delta) with p = exp2(scale2 s - lse2), 0 where masked.
MMA_FN void fa_dq_scores(float (*s)[4], float (*dp)[4], const bool masked, const uint* rows, const uint live_rows,
                         const uint u0, const uint t0, const uint t, const float scale2, const float* row_lse2,
                         const float* row_delta) {
UNROLL
  for (uint j = 0; j < DQ_BC / 8; ++j)
UNROLL
    for (uint e = 0; e < 4; ++e) {
      const uint r = rows[e / 2], u = u0 + j * 8 + 2 * t + e % 2;
      const bool live = !masked || (r < live_rows && u <= t0 + r);
      s[j][e] = live ? FA_EXP2(s[j][e] * scale2 - row_lse2[e / 2]) * (dp[j][e] - row_delta[e / 2]) : 0.0f;
    }
}

#define DQ_THREADS (DQ_WARPS * 32)
#define DQ_BR (DQ_WARPS * 16)
// Backward, dq; runs first. Groups (query block, h, b) over sequences of T tokens (p0 = 0, k and v
// in qkv; out and dout (B*T, dout_stride)):
//   delta = dout.out per query (written for the dk/dv kernel), p = exp(scale q.k - lse),
//   ds = p (dout.v - delta), dq = scale * sum_u ds k.
__kernel __attribute__((reqd_work_group_size(DQ_THREADS, 1, 1))) void flash_attention_backward_dq(
    __global const ushort* qkv, const uint width, const uint k_col, const uint v_col, __global const act_t* out,
    __global const ushort* dout, const uint dout_stride, __global const float* lse, __global float* delta,
    __global act_t* dqkv, const uint T, const uint H, const uint group, const float scale) {
  TILE_LOCAL ushort Qs[DQ_BR * LDS];
  TILE_LOCAL ushort dOs[DQ_BR * LDS];
  TILE_LOCAL ushort Ks[DQ_BC * LDS];
  TILE_LOCAL ushort Vs[DQ_BC * LDS];
  __local float halves[2 * DQ_BR];
  XCH(DQ_THREADS)
  const uint lid = get_local_id(0), lane = lid % 32, warp = lid / 32, g = lane / 4, t = lane % 4;
  const uint t0 = get_group_id(0) * DQ_BR, h = get_group_id(1), b = get_group_id(2), kvh = h / group;
  const uint live_rows = min((uint)DQ_BR, T - t0);
  const bool aligned = fa_aligned(width, dout_stride, k_col, v_col, HS);
  fa_tile(Qs, DQ_BR, qkv + ((size_t)b * T + t0) * width + h * HS, width, live_rows, aligned, DQ_THREADS);
  fa_tile(dOs, DQ_BR, dout + ((size_t)b * T + t0) * dout_stride + h * HS, dout_stride, live_rows, aligned, DQ_THREADS);
  barrier(CLK_LOCAL_MEM_FENCE);  // dOs is written
  // delta: two work-items per row (2 BR = the group), each over half the head dims (dout from dOs,
  // out from global memory), then the halves in order.
  {
    const uint r = lid / 2, side = lid % 2;
    float part = 0.0f;
    if (r < live_rows) {
      const size_t at = ((size_t)b * T + t0 + r) * dout_stride + h * HS;
      __local const ushort* dout_row = dOs + r * LDS;
      for (uint d = side * (HS / 2); d < (side + 1) * (HS / 2); ++d) {
        part += fa_local_load(dout_row, d) * act_load(out, at + d);
      }
    }
    halves[lid] = part;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < live_rows) delta[((size_t)b * H + h) * T + t0 + lid] = halves[2 * lid] + halves[2 * lid + 1];
  const uint row0 = warp * 16;
  const uint rows[2] = {row0 + g, row0 + g + 8};
  float row_lse2[2], row_delta[2];
UNROLL
  for (uint i = 0; i < 2; ++i) {
    row_delta[i] = halves[2 * rows[i]] + halves[2 * rows[i] + 1];
    row_lse2[i] = lse[((size_t)b * H + h) * T + min(t0 + rows[i], T - 1)] * LOG2E;
  }
  __global const ushort* keys = qkv + (size_t)b * T * width + k_col + kvh * HS;
  __global const ushort* values = qkv + (size_t)b * T * width + v_col + kvh * HS;
  const uint last_key = t0 + live_rows - 1;
  const float scale2 = scale * LOG2E;

  float dq[HF][4];
UNROLL
  for (uint n = 0; n < HF; ++n)
UNROLL
    for (uint e = 0; e < 4; ++e) dq[n][e] = 0.0f;
  for (uint u0 = 0; u0 <= last_key; u0 += DQ_BC) {
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint keys_live = min((uint)DQ_BC, last_key + 1 - u0);
    fa_tile(Ks, DQ_BC, keys + (size_t)u0 * width, width, keys_live, aligned, DQ_THREADS);
    fa_tile(Vs, DQ_BC, values + (size_t)u0 * width, width, keys_live, aligned, DQ_THREADS);
    barrier(CLK_LOCAL_MEM_FENCE);
    float s[DQ_BC / 8][4], dp[DQ_BC / 8][4];
    fa_dots(s, DQ_BC / 8, Qs, row0, Ks, xch);
    fa_dots(dp, DQ_BC / 8, dOs, row0, Vs, xch);
    if (live_rows == DQ_BR && u0 + DQ_BC <= t0 + 1) {  // uniform, as in the forward
      fa_dq_scores(s, dp, false, rows, live_rows, u0, t0, t, scale2, row_lse2, row_delta);
    } else {
      fa_dq_scores(s, dp, true, rows, live_rows, u0, t0, t, scale2, row_lse2, row_delta);
    }
    fa_accumulate(dq, s, DQ_BC / 8, Ks, xch);
  }
  fa_store(dqkv + ((size_t)b * T + t0) * width + h * HS, width, dq, scale, scale, row0, live_rows);
}

// dk/dv's scores of one query tile (queries t0..) for this lane's two keys: s becomes p =
// exp2(scale2 s - lse2) and dp becomes ds = p (dp - delta), 0 where masked (a key at or past
// keys_end, a query at or past queries_live, or a key after the query).
MMA_FN void fa_dkdv_scores(float (*s)[4], float (*dp)[4], const bool masked, const uint* keys, const uint keys_end,
                           const uint queries_live, const uint t0, const uint t, const float scale2,
                           __local const float* lse_s, __local const float* delta_s) {
UNROLL
  for (uint jc = 0; jc < KV_BC / 8; ++jc)
UNROLL
    for (uint e = 0; e < 4; ++e) {
      const uint c = jc * 8 + 2 * t + e % 2, u = keys[e / 2];
      const bool live = !masked || (u < keys_end && c < queries_live && u <= t0 + c);
      const float p = live ? FA_EXP2(s[jc][e] * scale2 - lse_s[c]) : 0.0f;
      s[jc][e] = p;
      dp[jc][e] = p * (dp[jc][e] - delta_s[c]);
    }
}

#define KV_THREADS (KV_WARPS * 32)
#define KV_BR (KV_WARPS * 16)
// Backward, dk and dv, after dq (which wrote delta; out is unused, the arguments are dq's). Groups
// (key block, kv head, b); each sums over the `group` query heads of its kv head and the query
// tiles at or below the diagonal, in that fixed order, in float32 fragments (no atomics; dk and dv
// rounded once). With s^T = k q^T and dp^T = v dout^T per tile:
//   dv = sum_t p^T dout,  dk = scale sum_t ds^T q,  ds^T = p^T (dp^T - delta).
__kernel __attribute__((reqd_work_group_size(KV_THREADS, 1, 1))) void flash_attention_backward_dkdv(
    __global const ushort* qkv, const uint width, const uint k_col, const uint v_col, __global const act_t* out,
    __global const ushort* dout, const uint dout_stride, __global const float* lse, __global const float* delta,
    __global act_t* dqkv, const uint T, const uint H, const uint group, const float scale) {
  TILE_LOCAL ushort Ks[KV_BR * LDS];
  TILE_LOCAL ushort Vs[KV_BR * LDS];
  TILE_LOCAL ushort Qs[KV_BC * LDS];
  TILE_LOCAL ushort dOs[KV_BC * LDS];
  __local float lse_s[KV_BC], delta_s[KV_BC];
  XCH(KV_THREADS)
  (void)out;
  const uint lid = get_local_id(0), lane = lid % 32, warp = lid / 32, g = lane / 4, t = lane % 4;
  const uint u_first = get_group_id(0) * KV_BR, kvh = get_group_id(1), b = get_group_id(2);
  const uint live_rows = min((uint)KV_BR, T - u_first);
  const bool aligned = fa_aligned(width, dout_stride, k_col, v_col, HS);
  fa_tile(Ks, KV_BR, qkv + ((size_t)b * T + u_first) * width + k_col + kvh * HS, width, live_rows, aligned, KV_THREADS);
  fa_tile(Vs, KV_BR, qkv + ((size_t)b * T + u_first) * width + v_col + kvh * HS, width, live_rows, aligned, KV_THREADS);
  const uint row0 = warp * 16;
  const uint keys[2] = {u_first + row0 + g, u_first + row0 + g + 8};  // this lane's two keys
  const float scale2 = scale * LOG2E;

  float dk[HF][4], dv[HF][4];
UNROLL
  for (uint n = 0; n < HF; ++n)
UNROLL
    for (uint e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.0f;
  for (uint j = 0; j < group; ++j) {
    const uint h = kvh * group + j;
    __global const float* head_lse = lse + ((size_t)b * H + h) * T;
    __global const float* head_delta = delta + ((size_t)b * H + h) * T;
    // The first query tile that reaches this block's first key: queries t >= u_first.
    for (uint t0 = u_first - u_first % KV_BC; t0 < T; t0 += KV_BC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      const uint queries_live = min((uint)KV_BC, T - t0);
      fa_tile(Qs, KV_BC, qkv + ((size_t)b * T + t0) * width + h * HS, width, queries_live, aligned, KV_THREADS);
      fa_tile(dOs, KV_BC, dout + ((size_t)b * T + t0) * dout_stride + h * HS, dout_stride, queries_live, aligned,
              KV_THREADS);
      for (uint c = lid; c < KV_BC; c += KV_THREADS) {
        lse_s[c] = c < queries_live ? head_lse[t0 + c] * LOG2E : 0.0f;
        delta_s[c] = c < queries_live ? head_delta[t0 + c] : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      float s[KV_BC / 8][4], dp[KV_BC / 8][4];
      fa_dots(s, KV_BC / 8, Ks, row0, Qs, xch);
      fa_dots(dp, KV_BC / 8, Vs, row0, dOs, xch);
      // Uniform: every key of the block live and at or before the tile's first query, every query live.
      if (live_rows == KV_BR && queries_live == KV_BC && u_first + KV_BR <= t0 + 1) {
        fa_dkdv_scores(s, dp, false, keys, u_first + live_rows, queries_live, t0, t, scale2, lse_s, delta_s);
      } else {
        fa_dkdv_scores(s, dp, true, keys, u_first + live_rows, queries_live, t0, t, scale2, lse_s, delta_s);
      }
      fa_accumulate(dv, s, KV_BC / 8, dOs, xch);
      fa_accumulate(dk, dp, KV_BC / 8, Qs, xch);
    }
  }
  __global act_t* base = dqkv + ((size_t)b * T + u_first) * width;
  fa_store(base + k_col + kvh * HS, width, dk, scale, scale, row0, live_rows);
  fa_store(base + v_col + kvh * HS, width, dv, 1.0f, 1.0f, row0, live_rows);
}
