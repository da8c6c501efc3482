// CausalAttention: the attention core between the QKV and output projections.
//   qkv (N, 3D) rows laid out [q | k | v], head h at columns h*hs .. h*hs+hs-1 of each
//   -> out (N, D) = per head softmax(q k^T / sqrt(hs), causal) v, heads concatenated.
// Scores are formed by strided-batched GEMMs over chunks of (batch, head) pairs, so the T x T
// workspace is (chunk, T, T) with chunk chosen to fit `workspace_bytes` — never (B, NH, T, T).
// Forward keeps q, k, v, out (B, NH, T, hs) and the row logsumexp (B, NH, T); backward recomputes
// the probabilities from them (no stored attention matrix), as FlashAttention does.
#pragma once

#include "models/layers/layer_context.h"

namespace paxocl::models {

class CausalAttention {
 public:
  CausalAttention(const device::Device& device, std::size_t num_heads, std::size_t dims_per_head,
                  std::size_t max_batch, std::size_t max_seq_len, std::size_t workspace_bytes, const std::string& name);

  const FloatBuffer& forward(LayerContext& ctx, const FloatBuffer& qkv);   // -> (N, D)
  const FloatBuffer& backward(LayerContext& ctx, const FloatBuffer& dout); // dout (N, D) -> dqkv (N, 3D)
  std::size_t chunk() const { return chunk_; }  // (batch, head) pairs per workspace pass

 private:
  std::size_t heads_, hs_, chunk_;
  FloatBuffer q_, k_, v_, out_heads_, lse_, out_rows_;      // forward state
  FloatBuffer scores_, dscores_;                            // (chunk, T, T) workspace
  FloatBuffer dq_, dk_, dv_, dout_heads_, delta_, dqkv_;    // backward
};

}  // namespace paxocl::models
