#include "models/layers/causal_attention.h"

#include <algorithm>
#include <cmath>

namespace paxocl::models {

using kernels::GemmOperand;
using kernels::GemmShape;
using kernels::Transpose;

CausalAttention::CausalAttention(const device::Device& device, device::DType act, std::size_t num_heads,
                                 std::size_t dims_per_head,
                                 std::size_t max_batch, std::size_t max_seq_len, std::size_t workspace_bytes,
                                 const std::string& name)
    : heads_(num_heads), hs_(dims_per_head) {
  const std::size_t T = max_seq_len, D = num_heads * dims_per_head;
  const std::size_t per_head = 2 * T * T * sizeof(float);  // scores + their gradient
  chunk_ = std::clamp<std::size_t>(workspace_bytes / per_head, 1, num_heads);
  auto buffer = [&](std::size_t count, const char* what) { return make_buffer(device, count, name + "." + what); };
  lse_ = buffer(max_batch * num_heads * T, "lse");
  out_ = make_buffer(device, act, max_batch * T * D, name + ".out");
  scores_ = buffer(chunk_ * T * T, "scores");
  dscores_ = buffer(chunk_ * T * T, "dscores");
  delta_ = buffer(max_batch * num_heads * T, "delta");
  dqkv_ = make_buffer(device, act, max_batch * T * 3 * D, name + ".dqkv");
}

// Heads h0 .. h0+g-1 of sequence b inside a row-major (B*T, width) buffer, column block `col`.
static GemmOperand heads_of(const ActBuffer& rows, std::size_t b, std::size_t T, std::size_t width,
                            std::size_t col, std::size_t h0, std::size_t hs) {
  return operand(rows, b * T * width + col + h0 * hs, width, hs);
}

const ActBuffer& CausalAttention::forward(LayerContext& ctx, const ActBuffer& qkv) {
  qkv_ = &qkv;
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  const GemmOperand scores = operand(scores_, 0, T, T * T);  // float32 C
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h0 = 0; h0 < heads_; h0 += chunk_) {
      const std::size_t g = std::min(chunk_, heads_ - h0);
      // scores (g, T, T) = q (g, T, hs) k^T
      ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, T, T, hs_, g}, 1.0f, heads_of(qkv, b, T, 3 * D, 0, h0, hs_),
                   heads_of(qkv, b, T, 3 * D, D, h0, hs_), 0.0f, scores);
      ctx.kernels.attention.softmax_forward(scores_, lse_, g, T, scale, (b * heads_ + h0) * T);
      // out (g, T, hs) = probs (g, T, T) v (g, T, hs), written straight into the (N, D) rows
      ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, T, hs_, T, g}, 1.0f, scores,
                   heads_of(qkv, b, T, 3 * D, 2 * D, h0, hs_), 0.0f, heads_of(out_, b, T, D, 0, h0, hs_));
    }
  }
  return out_;
}

const ActBuffer& CausalAttention::backward(LayerContext& ctx, const ActBuffer& dout) {
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  const ActBuffer& qkv = *qkv_;
  ctx.kernels.attention.row_dot(delta_, out_, dout, B, T, heads_, hs_);  // delta = rowwise dO . O per head
  const GemmOperand P = operand(scores_, 0, T, T * T), dS = operand(dscores_, 0, T, T * T);  // float32
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h0 = 0; h0 < heads_; h0 += chunk_) {
      const std::size_t g = std::min(chunk_, heads_ - h0), row0 = (b * heads_ + h0) * T;
      const GemmOperand q = heads_of(qkv, b, T, 3 * D, 0, h0, hs_), k = heads_of(qkv, b, T, 3 * D, D, h0, hs_),
                        v = heads_of(qkv, b, T, 3 * D, 2 * D, h0, hs_), dO = heads_of(dout, b, T, D, 0, h0, hs_);
      // Recompute probs (g, T, T) from q k^T and the saved logsumexp.
      ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, T, T, hs_, g}, 1.0f, q, k, 0.0f, P);
      ctx.kernels.attention.probs_from_lse(scores_, lse_, g, T, scale, row0);
      // dv = P^T dO;  dP = dO v^T;  dS = scale * P * (dP - delta);  dq = dS k;  dk = dS^T q
      ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, T, hs_, T, g}, 1.0f, P, dO, 0.0f,
                   heads_of(dqkv_, b, T, 3 * D, 2 * D, h0, hs_));
      ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, T, T, hs_, g}, 1.0f, dO, v, 0.0f, dS);
      ctx.kernels.attention.softmax_backward(dscores_, scores_, delta_, g, T, scale, row0);
      ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, T, hs_, T, g}, 1.0f, dS, k, 0.0f,
                   heads_of(dqkv_, b, T, 3 * D, 0, h0, hs_));
      ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, T, hs_, T, g}, 1.0f, dS, q, 0.0f,
                   heads_of(dqkv_, b, T, 3 * D, D, h0, hs_));
    }
  }
  return dqkv_;
}

}  // namespace paxocl::models
