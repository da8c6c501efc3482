// Linear: y = x W^T + b.      x (N, in)  W (out, in)  b (out)  y (N, out)
// forward remembers x (the caller keeps it alive until backward); backward returns dx (N, in) and
// accumulates dW += dy^T x and db += colsum(dy).
#pragma once

#include <string>

#include "models/layers/layer_context.h"
#include "common/rng.h"

namespace paxocl::models {

class Linear {
 public:
  Linear(const device::Device& device, Param weight, Param bias, std::size_t in, std::size_t out,
         std::size_t max_rows, const std::string& name);

  void init(device::Queue& queue, Rng& rng, float std) const;  // W ~ N(0, std^2), b = 0
  const FloatBuffer& forward(LayerContext& ctx, const FloatBuffer& x);
  const FloatBuffer& backward(LayerContext& ctx, const FloatBuffer& dy);

 private:
  Param weight_, bias_;
  std::size_t in_, out_;
  const FloatBuffer* x_ = nullptr;
  FloatBuffer y_, dx_;
};

}  // namespace paxocl::models
