#include "models/layers/causal_attention.h"

#include <algorithm>
#include <cmath>

namespace paxocl::models {

using kernels::GemmOperand;
using kernels::GemmShape;
using kernels::Transpose;

CausalAttention::CausalAttention(const device::Device& device, std::size_t num_heads, std::size_t dims_per_head,
                                 std::size_t max_batch, std::size_t max_seq_len, std::size_t workspace_bytes,
                                 const std::string& name)
    : heads_(num_heads), hs_(dims_per_head) {
  const std::size_t pairs = max_batch * num_heads, T = max_seq_len;
  const std::size_t per_pair = 2 * T * T * sizeof(float);  // scores + their gradient
  chunk_ = std::clamp<std::size_t>(workspace_bytes / per_pair, 1, pairs);
  const std::size_t heads_size = pairs * T * dims_per_head, D = num_heads * dims_per_head;
  auto buffer = [&](std::size_t count, const char* what) { return make_buffer(device, count, name + "." + what); };
  q_ = buffer(heads_size, "q");
  k_ = buffer(heads_size, "k");
  v_ = buffer(heads_size, "v");
  out_heads_ = buffer(heads_size, "out_heads");
  lse_ = buffer(pairs * T, "lse");
  out_rows_ = buffer(max_batch * T * D, "out");
  scores_ = buffer(chunk_ * T * T, "scores");
  dscores_ = buffer(chunk_ * T * T, "dscores");
  dq_ = buffer(heads_size, "dq");
  dk_ = buffer(heads_size, "dk");
  dv_ = buffer(heads_size, "dv");
  dout_heads_ = buffer(heads_size, "dout_heads");
  delta_ = buffer(pairs * T, "delta");
  dqkv_ = buffer(max_batch * T * 3 * D, "dqkv");
}

const FloatBuffer& CausalAttention::forward(LayerContext& ctx, const FloatBuffer& qkv) {
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_, pairs = B * heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  auto& k = ctx.kernels.attention;
  k.rows_to_heads(q_, qkv, B, T, heads_, hs_, 3 * D, 0);
  k.rows_to_heads(k_, qkv, B, T, heads_, hs_, 3 * D, D);
  k.rows_to_heads(v_, qkv, B, T, heads_, hs_, 3 * D, 2 * D);
  const std::size_t head_stride = T * hs_, score_stride = T * T;
  for (std::size_t g0 = 0; g0 < pairs; g0 += chunk_) {
    const std::size_t g = std::min(chunk_, pairs - g0), off = g0 * head_stride;
    // scores (g, T, T) = q (g, T, hs) k^T
    ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, T, T, hs_, g}, 1.0f, {q_.get(), off, hs_, head_stride},
                 {k_.get(), off, hs_, head_stride}, 0.0f, {scores_.get(), 0, T, score_stride});
    k.softmax_forward(scores_, lse_, g, T, scale, g0 * T);
    // out (g, T, hs) = probs (g, T, T) v (g, T, hs)
    ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, T, hs_, T, g}, 1.0f, {scores_.get(), 0, T, score_stride},
                 {v_.get(), off, hs_, head_stride}, 0.0f, {out_heads_.get(), off, hs_, head_stride});
  }
  k.heads_to_rows(out_rows_, out_heads_, B, T, heads_, hs_, D, 0);
  return out_rows_;
}

const FloatBuffer& CausalAttention::backward(LayerContext& ctx, const FloatBuffer& dout) {
  const std::size_t B = ctx.batch, T = ctx.seq_len, D = heads_ * hs_, pairs = B * heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs_));
  auto& k = ctx.kernels.attention;
  k.rows_to_heads(dout_heads_, dout, B, T, heads_, hs_, D, 0);
  k.row_dot(delta_, out_heads_, dout_heads_, pairs * T, hs_);
  const std::size_t head_stride = T * hs_, score_stride = T * T;
  for (std::size_t g0 = 0; g0 < pairs; g0 += chunk_) {
    const std::size_t g = std::min(chunk_, pairs - g0), off = g0 * head_stride;
    const GemmOperand q{q_.get(), off, hs_, head_stride}, kk{k_.get(), off, hs_, head_stride},
        v{v_.get(), off, hs_, head_stride}, dO{dout_heads_.get(), off, hs_, head_stride};
    const GemmOperand P{scores_.get(), 0, T, score_stride}, dS{dscores_.get(), 0, T, score_stride};
    // Recompute probs (g, T, T) from q k^T and the saved logsumexp.
    ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, T, T, hs_, g}, 1.0f, q, kk, 0.0f, P);
    k.probs_from_lse(scores_, lse_, g, T, scale, g0 * T);
    // dv = P^T dO;  dP = dO v^T;  dS = scale * P * (dP - delta)
    ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, T, hs_, T, g}, 1.0f, P, dO, 0.0f,
                 {dv_.get(), off, hs_, head_stride});
    ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, T, T, hs_, g}, 1.0f, dO, v, 0.0f, dS);
    k.softmax_backward(dscores_, scores_, delta_, g, T, scale, g0 * T);
    // dq = dS k;  dk = dS^T q
    ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, T, hs_, T, g}, 1.0f, dS, kk, 0.0f,
                 {dq_.get(), off, hs_, head_stride});
    ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, T, hs_, T, g}, 1.0f, dS, q, 0.0f,
                 {dk_.get(), off, hs_, head_stride});
  }
  k.heads_to_rows(dqkv_, dq_, B, T, heads_, hs_, 3 * D, 0);
  k.heads_to_rows(dqkv_, dk_, B, T, heads_, hs_, 3 * D, D);
  k.heads_to_rows(dqkv_, dv_, B, T, heads_, hs_, 3 * D, 2 * D);
  return dqkv_;
}

}  // namespace paxocl::models
