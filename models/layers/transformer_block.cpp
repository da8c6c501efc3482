#include "models/layers/transformer_block.h"

namespace paxocl::models {

TransformerBlock::TransformerBlock(const device::Device& device, device::DType act, LayerNorm ln1,
                                   SelfAttention attention, LayerNorm ln2, Mlp mlp, std::size_t dims,
                                   std::size_t max_rows, const std::string& name)
    : ln1_(std::move(ln1)),
      attention_(std::move(attention)),
      ln2_(std::move(ln2)),
      mlp_(std::move(mlp)),
      dims_(dims),
      x2_(make_buffer(device, act, max_rows * dims, name + ".x2")),
      y_(make_buffer(device, act, max_rows * dims, name + ".y")) {}

const ActBuffer& TransformerBlock::forward(LayerContext& ctx, const ActBuffer& x) {
  // x2 = x + attention(...) is formed inside LN2 (residual fusion).
  const ActBuffer& m = ln2_.forward_residual(ctx, x, attention_.forward(ctx, ln1_.forward(ctx, x)), x2_);
  ctx.kernels.residual.add(y_, x2_, mlp_.forward(ctx, m), ctx.rows() * dims_);
  return y_;
}

const ActBuffer& TransformerBlock::backward(LayerContext& ctx, const ActBuffer& dy) {
  // dx2 = dy + LN2'(mlp'(dy));  dx = dx2 + LN1'(attention'(dx2)): the residual adds are fused
  // into the LayerNorm backward kernels.
  const ActBuffer& dx2 = ln2_.backward(ctx, mlp_.backward(ctx, dy), &dy);
  return ln1_.backward(ctx, attention_.backward(ctx, dx2), &dx2);
}

}  // namespace paxocl::models
