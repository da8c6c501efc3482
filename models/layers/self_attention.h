// SelfAttention: x (N, C) -> fused QKV projection (N, 3D) with bias -> causal multi-head
// attention (N, D) -> output projection (N, C) with bias.
#pragma once

#include "models/layers/causal_attention.h"
#include "models/layers/linear.h"

namespace paxocl::models {

class SelfAttention {
 public:
  SelfAttention(Linear qkv, CausalAttention core, Linear proj)
      : qkv_(std::move(qkv)), core_(std::move(core)), proj_(std::move(proj)) {}

  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x) {
    return proj_.forward(ctx, core_.forward(ctx, qkv_.forward(ctx, x)));
  }
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy) {
    return qkv_.backward(ctx, core_.backward(ctx, proj_.backward(ctx, dy)));
  }

 private:
  Linear qkv_;
  CausalAttention core_;
  Linear proj_;
};

}  // namespace paxocl::models
