// TransformerBlock: Pax's pre-norm decoder block, for any norm, attention and MLP layers.
//   x2 = x + Attention(Norm1(x));   y = x2 + Mlp(Norm2(x2))        x, x2, y: (N, C)
// backward(dy) returns dx (N, C); the residual branches add their gradients. x, x2, y and the
// gradients are in the activation dtype `act`.
// GptBlock: LayerNorm, SelfAttention (fused QKV with bias), GELU Mlp. LlamaBlock: RMSNorm,
// SelfAttention with rotary embeddings and grouped key/value heads (no biases), SwiGLU MLP.
// Norm must offer forward, forward_residual(ctx, x, delta, sum) and backward(ctx, dy, dresidual)
// (layer_norm.h, rms_norm.h); Attention and Mlp forward(ctx, x) and backward(ctx, dy).
#pragma once

#include <functional>
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
  // Tensor parallelism (ctx.tensor): the attention's and the MLP's outputs are partial sums over
  // the group (row-parallel projections), summed before the residual adds.
  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x, std::optional<std::size_t> decode_position = {}) {
    const std::size_t n = ctx.rows() * dims_;
    ActBuffer& a = attention_.forward(ctx, norm1_.forward(ctx, x), decode_position);
    if (ctx.tensor) ctx.tensor->sum(a, n);
    // x2 = x + attention(...) is formed inside norm2 (residual fusion).
    const ActBuffer& m = norm2_.forward_residual(ctx, x, a, x2_);
    ActBuffer& h = mlp_.forward(ctx, m);
    if (ctx.tensor) ctx.tensor->sum(h, n);
    ctx.kernels.residual.add(y_, x2_, h, n);
    return y_;
  }

  // Tensor parallelism: the input gradients of the column-parallel projections are partial sums;
  // their sums start as soon as each is computed and run while the weight gradient's GEMM does.
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy) {
    const std::size_t n = ctx.rows() * dims_;
    int ticket = -1;
    std::function<void(ActBuffer&)> start_sum;
    if (ctx.tensor) start_sum = [&](ActBuffer& dx) { ticket = ctx.tensor->start_sum(dx, n); };
    auto finish_sum = [&] {
      if (ctx.tensor) ctx.tensor->finish_sum(ticket);
    };
    // dx2 = dy + norm2'(mlp'(dy));  dx = dx2 + norm1'(attention'(dx2)): the residual adds are fused
    // into the norms' backward kernels.
    const ActBuffer& dm = mlp_.backward(ctx, dy, start_sum);
    finish_sum();
    const ActBuffer& dx2 = norm2_.backward(ctx, dm, &dy);
    const ActBuffer& da = attention_.backward(ctx, dx2, start_sum);
    finish_sum();
    return norm1_.backward(ctx, da, &dx2);
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
