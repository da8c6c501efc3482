// Mlp: the feed-forward block  x (N, C) -> fc (N, H) with fused bias + GELU-tanh -> proj (N, C).
#pragma once

#include "models/layers/linear.h"

namespace paxocl::models {

class Mlp {
 public:
  // `fc` must be built with Linear::Activation::kGelu.
  Mlp(Linear fc, Linear proj) : fc_(std::move(fc)), proj_(std::move(proj)) {}

  ActBuffer& forward(LayerContext& ctx, const ActBuffer& x) { return proj_.forward(ctx, fc_.forward(ctx, x)); }
  // after_dx: as Linear::backward's, for the input gradient.
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {}) {
    return fc_.backward(ctx, proj_.backward(ctx, dy), after_dx);
  }

 private:
  Linear fc_, proj_;
};

}  // namespace paxocl::models
