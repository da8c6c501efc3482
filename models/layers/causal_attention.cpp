#include "models/layers/causal_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace paxocl::models {

using kernels::GemmOperand;
using kernels::GemmShape;
using kernels::Transpose;

CausalAttention::CausalAttention(const device::Device& device, device::DType act, std::size_t num_heads,
                                 std::size_t dims_per_head,
                                 std::size_t max_batch, std::size_t max_seq_len, std::size_t workspace_bytes,
                                 const std::string& name)
    : heads_(num_heads), hs_(dims_per_head),
      query_block_(act == device::DType::kF32 ? std::min(max_seq_len, kQueryBlock) : max_seq_len) {
  const std::size_t T = max_seq_len, D = num_heads * dims_per_head;
  const std::size_t per_head = 2 * query_block_ * T * sizeof(float);  // scores + their gradient
  chunk_ = std::clamp<std::size_t>(workspace_bytes / per_head, 1, num_heads);
  auto buffer = [&](std::size_t count, const char* what) { return make_buffer(device, count, name + "." + what); };
  lse_ = buffer(max_batch * num_heads * T, "lse");
  out_ = make_buffer(device, act, max_batch * T * D, name + ".out");
  scores_ = buffer(chunk_ * query_block_ * T, "scores");
  dscores_ = buffer(chunk_ * query_block_ * T, "dscores");
  delta_ = buffer(max_batch * num_heads * T, "delta");
  dqkv_ = make_buffer(device, act, max_batch * T * 3 * D, name + ".dqkv");
}

// Heads h0 .. h0+g-1 of sequence b from its row t0 on, inside a row-major (B*T, width) buffer,
// column block `col`.
static GemmOperand heads_of(const ActBuffer& rows, std::size_t b, std::size_t T, std::size_t t0, std::size_t width,
                            std::size_t col, std::size_t h0, std::size_t hs) {
  return operand(rows, (b * T + t0) * width + col + h0 * hs, width, hs);
}

// The query blocks of a sequence of T tokens, `size` queries each (the last may be shorter).
static std::vector<kernels::QueryBlock> query_blocks(std::size_t T, std::size_t size) {
  std::vector<kernels::QueryBlock> blocks;
  for (std::size_t q0 = 0; q0 < T; q0 += size) blocks.push_back({q0, std::min(size, T - q0), T});
  return blocks;
}

const ActBuffer& CausalAttention::forward(LayerContext& ctx, const ActBuffer& qkv) {
  qkv_ = &qkv;
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h0 = 0; h0 < heads_; h0 += chunk_) {
      const std::size_t g = std::min(chunk_, heads_ - h0);
      for (const kernels::QueryBlock& q : query_blocks(T, query_block_)) {
        const std::size_t Q = q.rows, K = q.keys();
        const GemmOperand scores = operand(scores_, 0, K, Q * K);  // float32 (g, Q, K)
        // scores = q[q0 .. q0+Q) k[0 .. K)^T
        ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, Q, K, hs_, g}, 1.0f,
                     heads_of(qkv, b, T, q.q0, 3 * D, 0, h0, hs_), heads_of(qkv, b, T, 0, 3 * D, D, h0, hs_), 0.0f,
                     scores);
        ctx.kernels.attention.softmax_forward(scores_, lse_, g, q, scale, (b * heads_ + h0) * T);
        // out[q0 .. q0+Q) (g, Q, hs) = probs (g, Q, K) v[0 .. K), written straight into the (N, D) rows
        ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, Q, hs_, K, g}, 1.0f, scores,
                     heads_of(qkv, b, T, 0, 3 * D, 2 * D, h0, hs_), 0.0f, heads_of(out_, b, T, q.q0, D, 0, h0, hs_));
      }
    }
  }
  return out_;
}

const ActBuffer& CausalAttention::backward(LayerContext& ctx, const ActBuffer& dout) {
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  const ActBuffer& qkv = *qkv_;
  ctx.kernels.attention.row_dot(delta_, out_, dout, B, T, heads_, hs_);  // delta = rowwise dO . O per head
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h0 = 0; h0 < heads_; h0 += chunk_) {
      const std::size_t g = std::min(chunk_, heads_ - h0), row0 = (b * heads_ + h0) * T;
      const auto at = [&](const ActBuffer& rows, std::size_t t0, std::size_t width, std::size_t col) {
        return heads_of(rows, b, T, t0, width, col, h0, hs_);
      };
      // Last block first: it reaches every key, so its dk, dv (beta 0) start the sums the earlier
      // blocks add to.
      const std::vector<kernels::QueryBlock> blocks = query_blocks(T, query_block_);
      for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
        const kernels::QueryBlock& q = *it;
        const std::size_t Q = q.rows, K = q.keys();
        const float accumulate = it == blocks.rbegin() ? 0.0f : 1.0f;
        const GemmOperand P = operand(scores_, 0, K, Q * K), dS = operand(dscores_, 0, K, Q * K);  // float32 (g, Q, K)
        const GemmOperand qb = at(qkv, q.q0, 3 * D, 0), k = at(qkv, 0, 3 * D, D), v = at(qkv, 0, 3 * D, 2 * D),
                          dO = at(dout, q.q0, D, 0);
        // Recompute probs from q k^T and the saved logsumexp.
        ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, Q, K, hs_, g}, 1.0f, qb, k, 0.0f, P);
        ctx.kernels.attention.probs_from_lse(scores_, lse_, g, q, scale, row0);
        // dv[0 .. K) += P^T dO;  dP = dO v^T;  dS = scale * P * (dP - delta);  dq = dS k;  dk[0 .. K) += dS^T q
        ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, K, hs_, Q, g}, 1.0f, P, dO, accumulate,
                     at(dqkv_, 0, 3 * D, 2 * D));
        ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, Q, K, hs_, g}, 1.0f, dO, v, 0.0f, dS);
        ctx.kernels.attention.softmax_backward(dscores_, scores_, delta_, g, q, scale, row0);
        ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, Q, hs_, K, g}, 1.0f, dS, k, 0.0f,
                     at(dqkv_, q.q0, 3 * D, 0));
        ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, K, hs_, Q, g}, 1.0f, dS, qb, accumulate,
                     at(dqkv_, 0, 3 * D, D));
      }
    }
  }
  return dqkv_;
}

}  // namespace paxocl::models
