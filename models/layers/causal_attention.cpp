#include "models/layers/causal_attention.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/announce_once.h"
#include "common/errors.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/flash_attention.h"
#include "models/attention_workspace.h"

namespace paxocl::models {

using kernels::GemmOperand;
using kernels::GemmShape;
using kernels::RowStats;
using kernels::Transpose;

// g = H / Hkv, the query heads that share one key/value head.
static std::size_t group_size(std::size_t heads, std::size_t kv_heads, const std::string& name) {
  if (kv_heads == 0 || heads % kv_heads != 0) {
    throw ConfigError(fmt::format("{}: {} attention heads cannot share {} key/value heads: the number of kv heads "
                                  "must divide the number of heads",
                                  name, heads, kv_heads));
  }
  return heads / kv_heads;
}

CausalAttention::CausalAttention(const BufferSource& buffers, device::DType act, std::size_t num_heads,
                                 std::size_t num_kv_heads, std::size_t dims_per_head, std::size_t max_batch,
                                 std::size_t max_seq_len, std::size_t workspace_bytes, const std::string& name)
    : heads_(num_heads), kv_heads_(num_kv_heads), group_(group_size(num_heads, num_kv_heads, name)),
      hs_(dims_per_head),
      query_block_(attention_workspace(act, num_kv_heads, group_, max_seq_len, max_batch, workspace_bytes).query_block),
      max_batch_(max_batch),
      max_seq_len_(max_seq_len),
      flash_(kernels::uses_flash_attention(buffers.device().info(), dims_per_head)),
      cpu_flash_(!flash_ && kernels::uses_cpu_flash_attention(buffers.device().info())) {
  const device::Device& device = buffers.device();
  // Once per device and head size, not per layer; flash attention's line comes with its kernels
  // (flash_kernels), which know the program that runs.
  if (!flash_ && !cpu_flash_ &&
      announce_once(fmt::format("attention {} {}", fmt::ptr(device.info().id), dims_per_head))) {
    std::string path = *kernels::unfused_attention_path(device.info(), dims_per_head);
    if (device.info().kind == device::DeviceKind::kCpu)
      path += fmt::format("; no flash attention on the host: {}", kernels::cpu_flash_refusal(device.info()));
    spdlog::info("Attention on {}: {}", device.info().name, path);
  }
  const std::size_t T = max_seq_len, D = num_heads * dims_per_head;
  // Several sequences per pass only where one chunk holds every kv head (their row statistics
  // then stay one stride apart) and dk, dv need no per-sequence float32 sums (below).
  const AttentionWorkspace w = attention_workspace(act, num_kv_heads, group_, T, max_batch, workspace_bytes);
  chunk_ = w.chunk;
  seq_chunk_ = w.sequences;
  auto workspace = [&](std::size_t count, const char* what) { return buffers.transient(count, name + "." + what); };
  lse_ = buffers.saved(max_batch * num_heads * T, name + ".lse");
  out_ = buffers.saved(act, max_batch * T * D, name + ".out");
  delta_ = workspace(max_batch * num_heads * T, "delta");
  dqkv_ = buffers.transient(act, max_batch * T * qkv_width(), name + ".dqkv");
  if (flash_ || cpu_flash_) return;  // flash attention needs no score workspace
  scores_ = workspace(w.floats() * T, "scores");
  dscores_ = workspace(w.floats() * T, "dscores");
  // Summing g GEMM results in a 16-bit dqkv would round dk and dv g times.
  if (w.dkv_sums) dkv_sums_ = workspace(T * 2 * num_kv_heads * dims_per_head, "dkv_sums");
}

kernels::FlashAttentionKernels& CausalAttention::flash_kernels(LayerContext& ctx) const {
  kernels::FlashAttentionKernels& flash = *ctx.kernels.flash_attention(hs_);
  const device::DeviceInfo& info = ctx.device.info();
  if (announce_once(fmt::format("attention {} {} {}", fmt::ptr(info.id), hs_,
                                device::dtype_name(ctx.kernels.act_dtype())))) {
    spdlog::info("Attention on {}: {}", info.name, flash.describe());
  }
  return flash;
}

kernels::CpuFlashAttention& CausalAttention::cpu_flash(LayerContext& ctx) const {
  kernels::CpuFlashAttention& flash = *ctx.kernels.cpu_flash_attention();
  if (announce_once(fmt::format("attention {} host", fmt::ptr(ctx.device.info().id)))) {
    spdlog::info("Attention on {}: {}", ctx.device.info().name, flash.describe());
  }
  return flash;
}

// A strided batch of heads of sequence b from its row t0 on, inside a row-major (B*T, width)
// buffer: the first head at column `col`, the next ones `stride` columns apart.
static GemmOperand heads_of(const ActBuffer& rows, std::size_t b, std::size_t T, std::size_t t0, std::size_t width,
                            std::size_t col, std::size_t stride) {
  return operand(rows, (b * T + t0) * width + col, width, stride);
}

// The query blocks of a sequence of T tokens, `size` queries each (the last may be shorter).
static std::vector<kernels::QueryBlock> query_blocks(std::size_t T, std::size_t size) {
  std::vector<kernels::QueryBlock> blocks;
  for (std::size_t q0 = 0; q0 < T; q0 += size) blocks.push_back({q0, std::min(size, T - q0)});
  return blocks;
}

// Batches: for sequence b, kv heads c0 .. c0+n-1 (a chunk) and j < g, query heads h0 = c0*g + j,
// h0 + g, ... meet kv heads c0, c0 + 1, ...: q and out columns h0*hs, g*hs apart; k and v columns
// c0*hs of their parts, hs apart; the row statistics of head h0 at (b*H + h0)*S, g*S apart. With
// seqs > 1 the chunk is every kv head (n*g = H), so sequence b+s's statistics follow sequence
// b+s-1's at the same g*S stride, and the GEMMs take the sequences as their outer batch.
void CausalAttention::attend(LayerContext& ctx, std::size_t b, std::size_t seqs, const SequenceRows& q,
                             const SequenceRows& kv, std::size_t k_col, std::size_t v_col, std::size_t queries,
                             std::size_t first_position, std::size_t stats_stride, std::size_t out_row) {
  const std::size_t D = heads_ * hs_, g = group_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  for (std::size_t c0 = 0; c0 < kv_heads_; c0 += chunk_) {
    const std::size_t n = std::min(chunk_, kv_heads_ - c0);
    const GemmOperand k = operand(*kv.buffer, kv.first_row * kv.width + k_col + c0 * hs_, kv.width, hs_),
                      v = operand(*kv.buffer, kv.first_row * kv.width + v_col + c0 * hs_, kv.width, hs_);
    for (std::size_t j = 0; j < g; ++j) {
      const std::size_t h0 = c0 * g + j;
      const RowStats stats{(b * heads_ + h0) * stats_stride, g * stats_stride};
      for (const kernels::QueryBlock& block : query_blocks(queries, query_block_)) {
        const kernels::QueryBlock at{first_position + block.q0, block.rows};  // its positions
        const std::size_t Q = at.rows, K = at.keys();
        const GemmOperand scores = operand(scores_, 0, K, Q * K);  // float32 (seqs, n, Q, K)
        const std::size_t q_step = q.sequence_rows * q.width, kv_step = kv.sequence_rows * kv.width,
                          scores_step = n * Q * K, out_step = queries * D;
        // scores = q[block] k[0 .. K)^T
        ctx.gemm.run_outer({seqs, q_step, kv_step, scores_step}, GemmShape{Transpose::kNo, Transpose::kYes, Q, K, hs_, n},
                           1.0f, operand(*q.buffer, (q.first_row + block.q0) * q.width + h0 * hs_, q.width, g * hs_), k,
                           0.0f, scores);
        ctx.kernels.attention.softmax_forward(scores_, lse_, seqs * n, at, scale, stats);
        // out[block] (n, Q, hs) = probs (n, Q, K) v[0 .. K), written straight into the (N, D) rows
        ctx.gemm.run_outer({seqs, scores_step, kv_step, out_step}, GemmShape{Transpose::kNo, Transpose::kNo, Q, hs_, K, n},
                           1.0f, scores, v, 0.0f, operand(out_, (out_row + block.q0) * D + h0 * hs_, D, g * hs_));
      }
    }
  }
}

const ActBuffer& CausalAttention::forward(LayerContext& ctx, const ActBuffer& qkv) {
  qkv_ = &qkv;
  const std::size_t T = ctx.seq_len, D = heads_ * hs_, W = qkv_width();
  if (flash_) {
    flash_kernels(ctx).forward(qkv, W, kernels::KeyValueRows{&qkv, T, W, D, D + kv_heads_ * hs_}, out_, D, lse_, T,
                               heads(), ctx.batch, T, 0);
    return out_;
  }
  if (cpu_flash_) {
    cpu_flash(ctx).forward(qkv, W, kernels::KeyValueRows{&qkv, T, W, D, D + kv_heads_ * hs_}, out_, D, lse_, T,
                           heads(), ctx.batch, T, 0);
    return out_;
  }
  for (std::size_t b = 0; b < ctx.batch; b += seq_chunk_) {
    const SequenceRows rows{&qkv, b * T, W, T};
    attend(ctx, b, std::min(seq_chunk_, ctx.batch - b), rows, rows, D, D + kv_heads_ * hs_, T, 0, T, b * T);
  }
  return out_;
}

const ActBuffer& CausalAttention::decode(LayerContext& ctx, const ActBuffer& qkv, std::size_t position) {
  const std::size_t n = ctx.seq_len, D = heads_ * hs_, W = qkv_width(), KV = 2 * kv_heads_ * hs_;
  if (ctx.batch > max_batch_ || position + n > max_seq_len_) {
    throw ConfigError(fmt::format("decoding {} sequences to position {}: this model holds {} sequences of {} tokens",
                                  ctx.batch, position + n, max_batch_, max_seq_len_));
  }
  if (kv_cache_.count() == 0) kv_cache_ = make_buffer(ctx.device, qkv.dtype(), max_batch_ * max_seq_len_ * KV, "kv_cache");
  const std::size_t elem = device::dtype_size(qkv.dtype());
  for (std::size_t b = 0; b < ctx.batch; ++b) {
    // The new rows' keys and values (columns D .. W) join the cache at rows p .. p+n-1.
    ctx.device.queue().copy_rows({qkv.get(), b * n, D * elem, W * elem},
                                 {kv_cache_.get(), b * max_seq_len_ + position, 0, KV * elem}, KV * elem, n);
    if (flash_ || cpu_flash_) continue;
    attend(ctx, b, 1, SequenceRows{&qkv, b * n, W, n}, SequenceRows{&kv_cache_, b * max_seq_len_, KV, max_seq_len_}, 0,
           kv_heads_ * hs_, n, position, max_seq_len_, b * n);
  }
  if (flash_) {
    flash_kernels(ctx).forward(qkv, W, kernels::KeyValueRows{&kv_cache_, max_seq_len_, KV, 0, kv_heads_ * hs_},
                               out_, D, lse_, max_seq_len_, heads(), ctx.batch, n, position);
  }
  if (cpu_flash_) {
    cpu_flash(ctx).forward(qkv, W, kernels::KeyValueRows{&kv_cache_, max_seq_len_, KV, 0, kv_heads_ * hs_}, out_, D,
                           lse_, max_seq_len_, heads(), ctx.batch, n, position);
  }
  return out_;
}

ActBuffer& CausalAttention::backward(LayerContext& ctx, const ActBuffer& dout) {
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_, W = qkv_width(), g = group_;
  const std::size_t k_col = D, v_col = D + kv_heads_ * hs_, kv_width = 2 * kv_heads_ * hs_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  const ActBuffer& qkv = *qkv_;
  const bool sums_in_float = dkv_sums_.get() != nullptr;
  if (flash_) {
    flash_kernels(ctx).backward(qkv, W, k_col, v_col, out_, dout, lse_, delta_, dqkv_, heads(), B, T);
    return dqkv_;
  }
  if (cpu_flash_) {
    cpu_flash(ctx).backward(qkv, W, k_col, v_col, out_, dout, lse_, dqkv_, heads(), B, T);
    return dqkv_;
  }
  ctx.kernels.attention.row_dot(delta_, out_, dout, B, T, heads_, hs_);  // delta = rowwise dO . O per head
  for (std::size_t b = 0; b < B; b += seq_chunk_) {
    const std::size_t seqs = std::min(seq_chunk_, B - b);  // > 1 only with one chunk and no float32 sums
    for (std::size_t c0 = 0; c0 < kv_heads_; c0 += chunk_) {
      const std::size_t n = std::min(chunk_, kv_heads_ - c0);
      const GemmOperand k = heads_of(qkv, b, T, 0, W, k_col + c0 * hs_, hs_),
                        v = heads_of(qkv, b, T, 0, W, v_col + c0 * hs_, hs_);
      // dk, dv of the chunk's kv heads: in dqkv itself, or in the sequence's float32 sums, which
      // hold dqkv's kv columns (T, 2*Hkv*hs).
      const GemmOperand dk = sums_in_float ? operand(dkv_sums_, c0 * hs_, kv_width, hs_)
                                           : heads_of(dqkv_, b, T, 0, W, k_col + c0 * hs_, hs_);
      const GemmOperand dv = sums_in_float ? operand(dkv_sums_, (kv_heads_ + c0) * hs_, kv_width, hs_)
                                           : heads_of(dqkv_, b, T, 0, W, v_col + c0 * hs_, hs_);
      for (std::size_t j = 0; j < g; ++j) {
        const std::size_t h0 = c0 * g + j;
        const RowStats stats{(b * heads_ + h0) * T, g * T};
        // The first query head's last block first: it reaches every key, so its dk, dv (beta 0)
        // start the sums the earlier blocks and the other query heads of the group add to.
        const std::vector<kernels::QueryBlock> blocks = query_blocks(T, query_block_);
        for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
          const kernels::QueryBlock& q = *it;
          const std::size_t Q = q.rows, K = q.keys();
          const float accumulate = j == 0 && it == blocks.rbegin() ? 0.0f : 1.0f;
          const GemmOperand P = operand(scores_, 0, K, Q * K), dS = operand(dscores_, 0, K, Q * K);  // float32 (seqs, n, Q, K)
          const GemmOperand qb = heads_of(qkv, b, T, q.q0, W, h0 * hs_, g * hs_),
                            dO = heads_of(dout, b, T, q.q0, D, h0 * hs_, g * hs_);
          // Each sequence's rows: T rows of qkv, dqkv and dout further; its scores n*Q*K further.
          const std::size_t qkv_step = T * W, dout_step = T * D, scores_step = n * Q * K;
          const auto outer = [seqs](std::size_t a, std::size_t bs, std::size_t c) {
            return kernels::GemmOuterBatch{seqs, a, bs, c};
          };
          // Recompute probs from q k^T and the saved logsumexp.
          ctx.gemm.run_outer(outer(qkv_step, qkv_step, scores_step), GemmShape{Transpose::kNo, Transpose::kYes, Q, K, hs_, n},
                             1.0f, qb, k, 0.0f, P);
          ctx.kernels.attention.probs_from_lse(scores_, lse_, seqs * n, q, scale, stats);
          // dv[0 .. K) += P^T dO;  dP = dO v^T;  dS = scale * P * (dP - delta);  dq = dS k;  dk[0 .. K) += dS^T q
          ctx.gemm.run_outer(outer(scores_step, dout_step, qkv_step), GemmShape{Transpose::kYes, Transpose::kNo, K, hs_, Q, n},
                             1.0f, P, dO, accumulate, dv);
          ctx.gemm.run_outer(outer(dout_step, qkv_step, scores_step), GemmShape{Transpose::kNo, Transpose::kYes, Q, K, hs_, n},
                             1.0f, dO, v, 0.0f, dS);
          ctx.kernels.attention.softmax_backward(dscores_, scores_, delta_, seqs * n, q, scale, stats);
          ctx.gemm.run_outer(outer(scores_step, qkv_step, qkv_step), GemmShape{Transpose::kNo, Transpose::kNo, Q, hs_, K, n},
                             1.0f, dS, k, 0.0f, heads_of(dqkv_, b, T, q.q0, W, h0 * hs_, g * hs_));
          ctx.gemm.run_outer(outer(scores_step, qkv_step, qkv_step), GemmShape{Transpose::kYes, Transpose::kNo, K, hs_, Q, n},
                             1.0f, dS, qb, accumulate, dk);
        }
      }
    }
    if (sums_in_float) ctx.kernels.cast.rows_to_act(dqkv_, b * T * W + k_col, W, dkv_sums_, T, kv_width);
  }
  return dqkv_;
}

}  // namespace paxocl::models
