// Mlp: the feed-forward block  x (N, C) -> fc (N, H) -> GELU-tanh -> proj (N, C).
#pragma once

#include "models/layers/linear.h"

namespace paxocl::models {

class Mlp {
 public:
  Mlp(const device::Device& device, Linear fc, Linear proj, std::size_t hidden, std::size_t max_rows,
      const std::string& name);

  void init(device::Queue& queue, Rng& rng, float std) const;
  const FloatBuffer& forward(LayerContext& ctx, const FloatBuffer& x);
  const FloatBuffer& backward(LayerContext& ctx, const FloatBuffer& dy);

 private:
  Linear fc_, proj_;
  std::size_t hidden_;
  const FloatBuffer* pre_activation_ = nullptr;  // fc output (N, H), owned by fc_
  FloatBuffer activation_, dpre_;                 // GELU output and its input's gradient (N, H)
};

}  // namespace paxocl::models
