// RotaryEmbedding: rotary position embeddings (RoFormer; Hugging Face LLaMA's half-split
// "rotate_half" layout, in which HF LLaMA weights are stored), applied in place to the fused
// attention input between the QKV projection and CausalAttention:
//   qkv (N, (H + 2*Hkv) * hs) rows [q: H heads | k: Hkv heads | v: Hkv heads], N = B*T;
//   in every q and k head the pair (i, i + hs/2), i < hs/2, turns by angle p * base^(-2i/hs),
//   p = t + position_offset the row's position:  (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin).
// v is left alone. The rotation is orthogonal, so backward applies its transpose (the inverse
// rotation) to the dq and dk heads of dqkv in place, at the positions of the last forward.
// The cos and sin tables (max_positions, hs/2) are computed once on the host in double and held
// on the device in float32; the layer keeps no activations, so one instance can serve every
// layer of a model. Activations are in the kernels' activation dtype, computed in float32.
#pragma once

#include "models/layers/layer_context.h"

namespace paxocl::models {

class RotaryEmbedding {
 public:
  static constexpr float kDefaultBase = 10000.0f;

  // Throws ConfigError unless head_dims is even and positive and max_positions positive.
  RotaryEmbedding(const device::Device& device, std::size_t num_heads, std::size_t num_kv_heads,
                  std::size_t head_dims, float base, std::size_t max_positions, const std::string& name);

  // qkv (N, (H + 2*Hkv)*hs), N = ctx.batch * ctx.seq_len; each sequence's rows at positions
  // position_offset .. position_offset + T - 1 (ConfigError past max_positions).
  void forward(LayerContext& ctx, ActBuffer& qkv, std::size_t position_offset = 0);
  // dqkv (N, (H + 2*Hkv)*hs): the dq and dk heads turned back in place (dv untouched).
  void backward(LayerContext& ctx, ActBuffer& dqkv);

  std::size_t max_positions() const { return max_positions_; }

 private:
  kernels::RopeShape shape(const LayerContext& ctx) const;

  std::string name_;
  std::size_t heads_, kv_heads_, hs_, max_positions_;
  FloatBuffer cos_, sin_;       // (max_positions, hs/2)
  std::size_t offset_ = 0;      // the last forward's position_offset, which backward turns back by
};

}  // namespace paxocl::models
