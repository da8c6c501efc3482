// SelfAttention: x (N, C) -> fused QKV projection (N, (H + 2 Hkv) hs) (GPT: with bias, Hkv = H)
// -> rotary position embeddings on its q and k heads (LLaMA; none for GPT, whose positions are
// learned embeddings) -> causal attention (N, H hs) -> output projection (N, C).
// The rotary layer may be shared by every layer of a model (it holds only its tables).
#pragma once

#include <memory>
#include <optional>

#include "models/layers/causal_attention.h"
#include "models/layers/linear.h"
#include "models/layers/rotary_embedding.h"

namespace paxocl::models {

class SelfAttention {
 public:
  SelfAttention(Linear qkv, CausalAttention core, Linear proj, std::shared_ptr<RotaryEmbedding> rope = nullptr)
      : qkv_(std::move(qkv)), core_(std::move(core)), proj_(std::move(proj)), rope_(std::move(rope)) {}

  // decode_position: decoding with the key/value cache, the rows at positions from there on.
  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x, std::optional<std::size_t> decode_position = {}) {
    ActBuffer& qkv = qkv_.forward(ctx, x);
    if (rope_) rope_->forward(ctx, qkv, decode_position.value_or(0));
    return proj_.forward(ctx, decode_position ? core_.decode(ctx, qkv, *decode_position) : core_.forward(ctx, qkv));
  }
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy) {
    ActBuffer& dqkv = core_.backward(ctx, proj_.backward(ctx, dy));
    if (rope_) rope_->backward(ctx, dqkv);
    return qkv_.backward(ctx, dqkv);
  }

 private:
  Linear qkv_;
  CausalAttention core_;
  Linear proj_;
  std::shared_ptr<RotaryEmbedding> rope_;
};

}  // namespace paxocl::models
