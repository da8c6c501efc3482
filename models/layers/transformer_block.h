// TransformerBlock: Pax's pre-LayerNorm decoder block.
//   x2 = x + SelfAttention(LN1(x));   y = x2 + Mlp(LN2(x2))        x, x2, y: (N, C)
// backward(dy) returns dx (N, C); the residual branches add their gradients. x, x2, y and the
// gradients are in the activation dtype `act`.
#pragma once

#include "models/layers/layer_norm.h"
#include "models/layers/mlp.h"
#include "models/layers/self_attention.h"

namespace paxocl::models {

class TransformerBlock {
 public:
  TransformerBlock(const device::Device& device, device::DType act, LayerNorm ln1, SelfAttention attention,
                   LayerNorm ln2, Mlp mlp, std::size_t dims, std::size_t max_rows, const std::string& name);

  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x);
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy);

 private:
  LayerNorm ln1_;
  SelfAttention attention_;
  LayerNorm ln2_;
  Mlp mlp_;
  std::size_t dims_;
  ActBuffer x2_, y_;
};

}  // namespace paxocl::models
