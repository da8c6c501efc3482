#include "models/layers/transformer_block.h"

namespace paxocl::models {

TransformerBlock::TransformerBlock(const device::Device& device, LayerNorm ln1, SelfAttention attention, LayerNorm ln2,
                                   Mlp mlp, std::size_t dims, std::size_t max_rows, const std::string& name)
    : ln1_(std::move(ln1)),
      attention_(std::move(attention)),
      ln2_(std::move(ln2)),
      mlp_(std::move(mlp)),
      dims_(dims),
      x2_(make_buffer(device, max_rows * dims, name + ".x2")),
      y_(make_buffer(device, max_rows * dims, name + ".y")),
      dx2_(make_buffer(device, max_rows * dims, name + ".dx2")),
      dx_(make_buffer(device, max_rows * dims, name + ".dx")) {}

void TransformerBlock::init(device::Queue& queue, Rng& rng, float std) const {
  ln1_.init(queue);
  attention_.init(queue, rng, std);
  ln2_.init(queue);
  mlp_.init(queue, rng, std);
}

const FloatBuffer& TransformerBlock::forward(LayerContext& ctx, const FloatBuffer& x) {
  const std::size_t n = ctx.rows() * dims_;
  ctx.kernels.elementwise.add(x2_, x, attention_.forward(ctx, ln1_.forward(ctx, x)), n);
  ctx.kernels.elementwise.add(y_, x2_, mlp_.forward(ctx, ln2_.forward(ctx, x2_)), n);
  return y_;
}

const FloatBuffer& TransformerBlock::backward(LayerContext& ctx, const FloatBuffer& dy) {
  const std::size_t n = ctx.rows() * dims_;
  ctx.kernels.elementwise.add(dx2_, dy, ln2_.backward(ctx, mlp_.backward(ctx, dy)), n);
  ctx.kernels.elementwise.add(dx_, dx2_, ln1_.backward(ctx, attention_.backward(ctx, dx2_)), n);
  return dx_;
}

}  // namespace paxocl::models
