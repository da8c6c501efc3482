// CausalAttention: the attention core between the QKV and output projections.
//   qkv (N, 3D) rows laid out [q | k | v], head h at columns h*hs .. h*hs+hs-1 of each
//   -> out (N, D) = per head softmax(q k^T / sqrt(hs), causal) v, heads concatenated.
// Heads are read and written in place in those row layouts: for one sequence b the heads form a
// strided batch (leading dimension 3D or D, batch stride hs), so the GEMMs need no permuted
// copies. Scores come from strided-batched GEMMs over chunks of heads of one sequence and blocks
// of queries: block q0 .. q0+Q-1 meets only its causal keys 0 .. q0+Q-1, so the masked upper
// triangle is computed only inside the diagonal blocks (at T = 2048 and Q = 256, 56% of the
// full T x T GEMM work), and the workspace is (chunk, Q, T) with chunk chosen to fit
// `workspace_bytes` — never (B, NH, T, T). A block holds its rows' whole causal range, so each
// row's softmax is exact in one pass (no online rescaling across blocks). In the backward dk and
// dv are sums over the blocks, accumulated by the GEMMs (beta 1) from the last block, which
// reaches every key; with 16-bit activations the blocks would round those sums once per block,
// so they run as one block of T queries. Forward keeps only the row logsumexp (B, NH, T);
// backward recomputes the probabilities (FlashAttention's trade). forward remembers qkv: the
// caller keeps it alive.
// qkv, out, dout, dqkv are in the activation dtype `act`; the score workspace, lse and delta are
// float32 whatever it is (Pax computes attention logits and softmax in float32).
#pragma once

#include "models/layers/layer_context.h"

namespace paxocl::models {

class CausalAttention {
 public:
  CausalAttention(const device::Device& device, device::DType act, std::size_t num_heads, std::size_t dims_per_head,
                  std::size_t max_batch, std::size_t max_seq_len, std::size_t workspace_bytes, const std::string& name);

  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& qkv);   // -> (N, D)
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dout); // dout (N, D) -> dqkv (N, 3D)
  std::size_t chunk() const { return chunk_; }  // heads per workspace pass
  std::size_t query_block() const { return query_block_; }

  static constexpr std::size_t kQueryBlock = 256;  // queries per score block (float32 activations)

 private:
  std::size_t heads_, hs_, query_block_, chunk_;
  const ActBuffer* qkv_ = nullptr;
  FloatBuffer lse_;                   // forward state: (B, NH, T)
  ActBuffer out_;                     // (N, D)
  FloatBuffer scores_, dscores_;      // (chunk, query block, T) workspace
  FloatBuffer delta_;                 // backward: (B, NH, T)
  ActBuffer dqkv_;                    // (N, 3D)
};

}  // namespace paxocl::models
