#include "models/layers/mlp.h"

namespace paxocl::models {

Mlp::Mlp(const device::Device& device, Linear fc, Linear proj, std::size_t hidden, std::size_t max_rows,
         const std::string& name)
    : fc_(std::move(fc)),
      proj_(std::move(proj)),
      hidden_(hidden),
      activation_(make_buffer(device, max_rows * hidden, name + ".gelu")),
      dpre_(make_buffer(device, max_rows * hidden, name + ".dgelu")) {}

void Mlp::init(device::Queue& queue, Rng& rng, float std) const {
  fc_.init(queue, rng, std);
  proj_.init(queue, rng, std);
}

const FloatBuffer& Mlp::forward(LayerContext& ctx, const FloatBuffer& x) {
  pre_activation_ = &fc_.forward(ctx, x);
  ctx.kernels.gelu.forward(activation_, *pre_activation_, ctx.rows() * hidden_);
  return proj_.forward(ctx, activation_);
}

const FloatBuffer& Mlp::backward(LayerContext& ctx, const FloatBuffer& dy) {
  const FloatBuffer& dactivation = proj_.backward(ctx, dy);
  ctx.kernels.gelu.backward(dpre_, *pre_activation_, dactivation, ctx.rows() * hidden_);
  return fc_.backward(ctx, dpre_);
}

}  // namespace paxocl::models
