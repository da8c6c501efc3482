// TransformerBlock: Pax's pre-norm decoder block, for any norm, attention and MLP layers.
//   x2 = x + Attention(Norm1(x));   y = x2 + Mlp(Norm2(x2))        x, x2, y: (N, C)
// backward(dy) returns dx (N, C); the residual branches add their gradients. x, x2, y and the
// gradients are in the activation dtype `act`.
// GptBlock: LayerNorm, SelfAttention (fused QKV with bias), GELU Mlp. LlamaBlock: RMSNorm,
// SelfAttention with rotary embeddings and grouped key/value heads (no biases), SwiGLU MLP.
// Norm must offer forward, forward_residual(ctx, x, delta, sum) and backward(ctx, dy, dresidual)
// (layer_norm.h, rms_norm.h); Attention and Mlp forward(ctx, x) and backward(ctx, dy).
#pragma once

#include <optional>

#include "models/layers/layer_norm.h"
#include "models/layers/mlp.h"
#include "models/layers/rms_norm.h"
#include "models/layers/self_attention.h"
#include "models/layers/swiglu_mlp.h"

namespace paxocl::models {

template <typename Norm, typename Attention, typename MlpLayer>
class TransformerBlock {
 public:
  TransformerBlock(const device::Device& device, device::DType act, Norm norm1, Attention attention, Norm norm2,
                   MlpLayer mlp, std::size_t dims, std::size_t max_rows, const std::string& name)
      : norm1_(std::move(norm1)),
        attention_(std::move(attention)),
        norm2_(std::move(norm2)),
        mlp_(std::move(mlp)),
        dims_(dims),
        x2_(make_buffer(device, act, max_rows * dims, name + ".x2")),
        y_(make_buffer(device, act, max_rows * dims, name + ".y")) {}

  // decode_position: decoding with the attention's key/value cache (SelfAttention::forward).
  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x, std::optional<std::size_t> decode_position = {}) {
    // x2 = x + attention(...) is formed inside norm2 (residual fusion).
    const ActBuffer& m =
        norm2_.forward_residual(ctx, x, attention_.forward(ctx, norm1_.forward(ctx, x), decode_position), x2_);
    ctx.kernels.residual.add(y_, x2_, mlp_.forward(ctx, m), ctx.rows() * dims_);
    return y_;
  }

  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy) {
    // dx2 = dy + norm2'(mlp'(dy));  dx = dx2 + norm1'(attention'(dx2)): the residual adds are fused
    // into the norms' backward kernels.
    const ActBuffer& dx2 = norm2_.backward(ctx, mlp_.backward(ctx, dy), &dy);
    return norm1_.backward(ctx, attention_.backward(ctx, dx2), &dx2);
  }

 private:
  Norm norm1_;
  Attention attention_;
  Norm norm2_;
  MlpLayer mlp_;
  std::size_t dims_;
  ActBuffer x2_, y_;
};

using GptBlock = TransformerBlock<LayerNorm, SelfAttention, Mlp>;
using LlamaBlock = TransformerBlock<RmsNorm, SelfAttention, SwigluMlp>;

}  // namespace paxocl::models
