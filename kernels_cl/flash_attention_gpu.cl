// Causal flash attention (FlashAttention-2's scheme) for the GPU set; a program of its own, built
// per head size (kernels_cl/flash_attention.h chooses the tiles). One sequence b, query head h,
// kv head h / group (grouped-query attention: `group` query heads share a kv head).
//   q    element (b, t, h, d)   at q[(b*queries + t)*q_stride + h*HS + d]        act_t
//   k, v element (b, u, kvh, d) at kv[(b*kv_rows + u)*kv_stride + k_col|v_col + kvh*HS + d]
//   out / dq like q (out_stride / q_stride), dk, dv like k, v
//   lse, delta (b, h, position) at [(b*H + h)*stats_stride + p0 + t]                float
// Query t sits at position p0 + t and attends keys 0 .. p0 + t (p0 > 0: decoding against a cache).
// Tiles: a work-group owns FA_BR rows (queries in the forward and dq kernels, keys in dk/dv), FA_TPR
// work-items per row; it streams tiles of FA_BC rows of the other side through local memory. Each
// work-item holds its row's score columns c = lane, lane + FA_TPR, ... and head dims d = lane,
// lane + FA_TPR, ...; a row's statistics are combined over its lanes in lane order, so every sum
// has one fixed order and a step is bit-reproducible. Scores and accumulators are float; no
// (T, T) tensor exists anywhere: the forward keeps only the log-sum-exp, the backward recomputes
// the probabilities tile by tile. Tiles wholly above the diagonal are never visited.
// scripts/check_ptx.sh builds (the tiles flash_tiles picks for GPT-2's and LLaMA-7B's heads at PAX_WG 256):
// check_ptx: -DHS=64 -DFA_BR=32 -DFA_BC=32
// check_ptx: -DHS=128 -DFA_BR=32 -DFA_BC=8

#ifndef HS
#define HS 64  // head size (the launcher always sets it)
#endif
#ifndef FA_BR
#define FA_BR (PAX_WG / 4 < 32 ? PAX_WG / 4 : 32)
#endif
#ifndef FA_BC
#define FA_BC 32
#endif
#define FA_TPR (PAX_WG / FA_BR)                    // work-items per owned row
#define FA_LD (HS + 1)                             // a tile row in local memory, padded against bank conflicts
#define FA_PLD (FA_BC + 1)                         // a row of a score tile in local memory
#define FA_DPT ((HS + FA_TPR - 1) / FA_TPR)        // head dims per work-item
#define FA_CPT ((FA_BC + FA_TPR - 1) / FA_TPR)     // score columns per work-item

#if PAX_WG % FA_BR != 0
#error "FA_BR must divide the work-group size"
#endif

// rows (FA_BR or FA_BC) x HS elements of act_t rows `stride` apart from `src` into a padded float
// tile, times `scale`; rows at or past `live` read as 0. Every work-item of the group calls it.
inline void fa_load_tile(__local float* tile, uint rows, __global const act_t* src, size_t stride, uint live,
                         float scale) {
  for (uint i = get_local_id(0); i < rows * HS; i += PAX_WG) {
    const uint r = i / HS, d = i - r * HS;
    tile[r * FA_LD + d] = r < live ? scale * act_load(src, (size_t)r * stride + d) : 0.0f;
  }
}

// The dot product of two padded tile rows.
inline float fa_dot(__local const float* a, __local const float* b) {
  float acc = 0.0f;
  for (uint d = 0; d < HS; ++d) acc += a[d] * b[d];
  return acc;
}

// The first element of sequence b, row `row`, column `col` of a (rows_per_seq, stride) act buffer.
inline size_t fa_at(uint b, uint rows_per_seq, uint row, size_t stride, uint col) {
  return ((size_t)b * rows_per_seq + row) * stride + col;
}

// Forward. Groups (query block, h, b): out = softmax(scale q k^T, causal) v and lse per query.
PAX_GPU_KERNEL void flash_attention_forward(__global const act_t* q, const uint q_stride, __global const act_t* kv,
                                            const uint kv_stride, const uint kv_rows, const uint k_col,
                                            const uint v_col, __global act_t* out, const uint out_stride,
                                            __global float* lse, const uint stats_stride, const uint queries,
                                            const uint p0, const uint H, const uint group, const float scale) {
  __local float Qs[FA_BR * FA_LD], Ks[FA_BC * FA_LD], Vs[FA_BC * FA_LD], Ps[FA_BR * FA_PLD];
  __local float row_max[FA_BR * FA_TPR], row_sum[FA_BR * FA_TPR];
  const uint lid = get_local_id(0), r = lid / FA_TPR, lane = lid - r * FA_TPR;
  const uint t0 = get_group_id(0) * FA_BR, h = get_group_id(1), b = get_group_id(2), kvh = h / group;
  const uint t = t0 + r, live_rows = min((uint)FA_BR, queries - t0);
  const bool live = t < queries;
  const uint position = p0 + t;
  const uint last_key = p0 + t0 + live_rows - 1;  // the block's last query reaches it
  // q pre-scaled: the tile's dot products are the scaled scores.
  fa_load_tile(Qs, FA_BR, q + fa_at(b, queries, t0, q_stride, h * HS), q_stride, live_rows, scale);
  __global const act_t* keys = kv + fa_at(b, kv_rows, 0, kv_stride, k_col + kvh * HS);
  __global const act_t* values = kv + fa_at(b, kv_rows, 0, kv_stride, v_col + kvh * HS);

  float o[FA_DPT];
  for (uint i = 0; i < FA_DPT; ++i) o[i] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (uint u0 = 0; u0 <= last_key; u0 += FA_BC) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads of Ks, Vs and Ps are done
    const uint keys_live = min((uint)FA_BC, last_key + 1 - u0);
    fa_load_tile(Ks, FA_BC, keys + (size_t)u0 * kv_stride, kv_stride, keys_live, 1.0f);
    fa_load_tile(Vs, FA_BC, values + (size_t)u0 * kv_stride, kv_stride, keys_live, 1.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    float s[FA_CPT], tile_max = -INFINITY;
    for (uint i = 0; i < FA_CPT; ++i) {
      const uint c = lane + i * FA_TPR;
      s[i] = -INFINITY;
      if (c < FA_BC && live && u0 + c <= position) s[i] = fa_dot(Qs + r * FA_LD, Ks + c * FA_LD);
      tile_max = fmax(tile_max, s[i]);
    }
    row_max[lid] = tile_max;
    barrier(CLK_LOCAL_MEM_FENCE);
    float m_new = m;
    for (uint j = 0; j < FA_TPR; ++j) m_new = fmax(m_new, row_max[r * FA_TPR + j]);
    // A row with no live key yet (a dead row) keeps m = -inf: nothing to rescale, every p is 0.
    const float alpha = m_new == -INFINITY ? 1.0f : exp(m - m_new);
    float part = 0.0f;
    for (uint i = 0; i < FA_CPT; ++i) {
      const uint c = lane + i * FA_TPR;
      const float p = s[i] == -INFINITY ? 0.0f : exp(s[i] - m_new);
      if (c < FA_BC) Ps[r * FA_PLD + c] = p;
      part += p;
    }
    row_sum[lid] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    float tile_sum = 0.0f;
    for (uint j = 0; j < FA_TPR; ++j) tile_sum += row_sum[r * FA_TPR + j];
    l = l * alpha + tile_sum;
    m = m_new;
    for (uint i = 0; i < FA_DPT; ++i) {
      const uint d = lane + i * FA_TPR;
      if (d >= HS) break;
      float acc = 0.0f;
      for (uint c = 0; c < FA_BC; ++c) acc += Ps[r * FA_PLD + c] * Vs[c * FA_LD + d];
      o[i] = o[i] * alpha + acc;
    }
  }
  if (!live) return;
  const float inv = 1.0f / l;
  const size_t at = fa_at(b, queries, t, out_stride, h * HS);
  for (uint i = 0; i < FA_DPT; ++i) {
    const uint d = lane + i * FA_TPR;
    if (d < HS) act_store(out, at + d, o[i] * inv);
  }
  if (lane == 0) lse[((size_t)b * H + h) * stats_stride + p0 + t] = m + log(l);
}

// Backward, dq; runs first. Groups (query block, h, b) over sequences of T tokens (p0 = 0, k and v
// in qkv; out and dout (B*T, dout_stride)):
//   delta = dout.out per query (written for the dk/dv kernel), p = exp(scale q.k - lse),
//   ds = p (dout.v - delta), dq = scale * sum_u ds k.
PAX_GPU_KERNEL void flash_attention_backward_dq(__global const act_t* qkv, const uint width, const uint k_col,
                                                const uint v_col, __global const act_t* out,
                                                __global const act_t* dout, const uint dout_stride,
                                                __global const float* lse, __global float* delta,
                                                __global act_t* dqkv, const uint T, const uint H, const uint group,
                                                const float scale) {
  __local float Qs[FA_BR * FA_LD], dOs[FA_BR * FA_LD], Ks[FA_BC * FA_LD], Vs[FA_BC * FA_LD], dSs[FA_BR * FA_PLD];
  __local float row_part[FA_BR * FA_TPR];
  const uint lid = get_local_id(0), r = lid / FA_TPR, lane = lid - r * FA_TPR;
  const uint t0 = get_group_id(0) * FA_BR, h = get_group_id(1), b = get_group_id(2), kvh = h / group;
  const uint t = t0 + r, live_rows = min((uint)FA_BR, T - t0);
  const bool live = t < T;
  const size_t stat = ((size_t)b * H + h) * T + min(t, T - 1);
  const float row_lse = lse[stat];
  fa_load_tile(Qs, FA_BR, qkv + fa_at(b, T, t0, width, h * HS), width, live_rows, scale);
  fa_load_tile(dOs, FA_BR, dout + fa_at(b, T, t0, dout_stride, h * HS), dout_stride, live_rows, 1.0f);
  barrier(CLK_LOCAL_MEM_FENCE);
  // delta: each lane's head dims, then the lanes in order.
  float part = 0.0f;
  if (live) {
    const size_t at = fa_at(b, T, t, dout_stride, h * HS);
    for (uint d = lane; d < HS; d += FA_TPR) part += dOs[r * FA_LD + d] * act_load(out, at + d);
  }
  row_part[lid] = part;
  barrier(CLK_LOCAL_MEM_FENCE);
  float row_delta = 0.0f;
  for (uint j = 0; j < FA_TPR; ++j) row_delta += row_part[r * FA_TPR + j];
  if (live && lane == 0) delta[stat] = row_delta;
  __global const act_t* keys = qkv + fa_at(b, T, 0, width, k_col + kvh * HS);
  __global const act_t* values = qkv + fa_at(b, T, 0, width, v_col + kvh * HS);
  const uint last_key = t0 + live_rows - 1;

  float dq[FA_DPT];
  for (uint i = 0; i < FA_DPT; ++i) dq[i] = 0.0f;
  for (uint u0 = 0; u0 <= last_key; u0 += FA_BC) {
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint keys_live = min((uint)FA_BC, last_key + 1 - u0);
    fa_load_tile(Ks, FA_BC, keys + (size_t)u0 * width, width, keys_live, 1.0f);
    fa_load_tile(Vs, FA_BC, values + (size_t)u0 * width, width, keys_live, 1.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < FA_CPT; ++i) {
      const uint c = lane + i * FA_TPR;
      if (c >= FA_BC) break;
      float ds = 0.0f;
      if (live && u0 + c <= t) {
        const float p = exp(fa_dot(Qs + r * FA_LD, Ks + c * FA_LD) - row_lse);
        ds = p * (fa_dot(dOs + r * FA_LD, Vs + c * FA_LD) - row_delta);
      }
      dSs[r * FA_PLD + c] = ds;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < FA_DPT; ++i) {
      const uint d = lane + i * FA_TPR;
      if (d >= HS) break;
      float acc = 0.0f;
      for (uint c = 0; c < FA_BC; ++c) acc += dSs[r * FA_PLD + c] * Ks[c * FA_LD + d];
      dq[i] += acc;
    }
  }
  if (!live) return;
  const size_t at = fa_at(b, T, t, width, h * HS);
  for (uint i = 0; i < FA_DPT; ++i) {
    const uint d = lane + i * FA_TPR;
    if (d < HS) act_store(dqkv, at + d, scale * dq[i]);
  }
}

// Backward, dk and dv, after dq (which wrote delta; out is unused, the arguments are dq's). Groups
// (key block, kv head, b); each sums over the `group` query heads of its
// kv head and the query tiles at or below the diagonal, in that fixed order, in float registers
// (no atomics; 16-bit dk, dv rounded once):
//   dv = sum_t p v-row's dout,  dk = sum_t ds (scale q).
PAX_GPU_KERNEL void flash_attention_backward_dkdv(__global const act_t* qkv, const uint width, const uint k_col,
                                                  const uint v_col, __global const act_t* out, __global const act_t* dout,
                                                  const uint dout_stride, __global const float* lse,
                                                  __global const float* delta, __global act_t* dqkv, const uint T,
                                                  const uint H, const uint group, const float scale) {
  __local float Ks[FA_BR * FA_LD], Vs[FA_BR * FA_LD], Qs[FA_BC * FA_LD], dOs[FA_BC * FA_LD];
  __local float Ps[FA_BR * FA_PLD], dSs[FA_BR * FA_PLD], lse_s[FA_BC], delta_s[FA_BC];
  const uint lid = get_local_id(0), r = lid / FA_TPR, lane = lid - r * FA_TPR;
  const uint u_first = get_group_id(0) * FA_BR, kvh = get_group_id(1), b = get_group_id(2);
  const uint u = u_first + r, live_rows = min((uint)FA_BR, T - u_first);
  const bool live = u < T;
  fa_load_tile(Ks, FA_BR, qkv + fa_at(b, T, u_first, width, k_col + kvh * HS), width, live_rows, 1.0f);
  fa_load_tile(Vs, FA_BR, qkv + fa_at(b, T, u_first, width, v_col + kvh * HS), width, live_rows, 1.0f);

  float dk[FA_DPT], dv[FA_DPT];
  for (uint i = 0; i < FA_DPT; ++i) dk[i] = dv[i] = 0.0f;
  for (uint j = 0; j < group; ++j) {
    const uint h = kvh * group + j;
    __global const float* head_lse = lse + ((size_t)b * H + h) * T;
    __global const float* head_delta = delta + ((size_t)b * H + h) * T;
    // The first query tile that reaches this block's first key: queries t >= u_first.
    for (uint t0 = u_first - u_first % FA_BC; t0 < T; t0 += FA_BC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      const uint queries_live = min((uint)FA_BC, T - t0);
      fa_load_tile(Qs, FA_BC, qkv + fa_at(b, T, t0, width, h * HS), width, queries_live, scale);
      fa_load_tile(dOs, FA_BC, dout + fa_at(b, T, t0, dout_stride, h * HS), dout_stride, queries_live, 1.0f);
      for (uint c = lid; c < FA_BC; c += PAX_WG) {
        lse_s[c] = c < queries_live ? head_lse[t0 + c] : 0.0f;
        delta_s[c] = c < queries_live ? head_delta[t0 + c] : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint i = 0; i < FA_CPT; ++i) {
        const uint c = lane + i * FA_TPR;
        if (c >= FA_BC) break;
        float p = 0.0f, ds = 0.0f;
        if (live && c < queries_live && u <= t0 + c) {
          p = exp(fa_dot(Qs + c * FA_LD, Ks + r * FA_LD) - lse_s[c]);
          ds = p * (fa_dot(dOs + c * FA_LD, Vs + r * FA_LD) - delta_s[c]);
        }
        Ps[r * FA_PLD + c] = p;
        dSs[r * FA_PLD + c] = ds;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint i = 0; i < FA_DPT; ++i) {
        const uint d = lane + i * FA_TPR;
        if (d >= HS) break;
        float acc_v = 0.0f, acc_k = 0.0f;
        for (uint c = 0; c < FA_BC; ++c) {
          acc_v += Ps[r * FA_PLD + c] * dOs[c * FA_LD + d];
          acc_k += dSs[r * FA_PLD + c] * Qs[c * FA_LD + d];
        }
        dv[i] += acc_v;
        dk[i] += acc_k;
      }
    }
  }
  if (!live) return;
  const size_t k_at = fa_at(b, T, u, width, k_col + kvh * HS), v_at = fa_at(b, T, u, width, v_col + kvh * HS);
  for (uint i = 0; i < FA_DPT; ++i) {
    const uint d = lane + i * FA_TPR;
    if (d >= HS) break;
    act_store(dqkv, k_at + d, dk[i]);
    act_store(dqkv, v_at + d, dv[i]);
  }
}
