// Mlp: the feed-forward block  x (N, C) -> fc (N, H) with fused bias + GELU-tanh -> proj (N, C).
#pragma once

#include "models/layers/linear.h"

namespace paxocl::models {

class Mlp {
 public:
  // `fc` must be built with Linear::Activation::kGelu.
  Mlp(Linear fc, Linear proj) : fc_(std::move(fc)), proj_(std::move(proj)) {}

  ActBuffer& forward(LayerContext& ctx, const ActBuffer& x) { return proj_.forward(ctx, hidden(ctx, x)); }
  // The forward up to the ffn1 site (fc and its GELU), which rematerialization recomputes; returns it.
  ActBuffer& hidden(LayerContext& ctx, const ActBuffer& x) { return fc_.forward(ctx, x); }
  // after_dx: as Linear::backward's, for the input gradient.
  // GELU's backward runs in proj's dx GEMM where the GEMM has the epilogue (the direct GEMM on
  // GPUs), else as fc's own kernel.
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {}) {
    if (proj_.backward_through_gelu(ctx, dy, fc_.preactivation())) {
      return fc_.backward_from_preactivation(ctx, proj_.dx(), after_dx);
    }
    return fc_.backward(ctx, proj_.dx(), after_dx);
  }

 private:
  Linear fc_, proj_;
};

}  // namespace paxocl::models
