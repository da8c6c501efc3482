// LayerNorm over the last dimension (eps 1e-5, statistics in fp32).
//   x (N, C) -> y (N, C) = (x - mean) * rstd * scale + bias;  mean, rstd (N) kept for backward.
// forward remembers its input (x, or the residual sum); backward returns dx (N, C) and
// accumulates dscale, dbias (C).
#pragma once

#include "models/layers/layer_context.h"

namespace paxocl::models {

class LayerNorm {
 public:
  static constexpr float kEpsilon = 1e-5f;
  LayerNorm(const device::Device& device, Param scale, Param bias, std::size_t dims, std::size_t max_rows,
            const std::string& name);

  const FloatBuffer& forward(LayerContext& ctx, const FloatBuffer& x);
  // Residual fusion: sum = x + delta (into the caller's buffer, which it keeps alive), y = LN(sum).
  const FloatBuffer& forward_residual(LayerContext& ctx, const FloatBuffer& x, const FloatBuffer& delta,
                                      FloatBuffer& sum);
  // dx = d LN(dy), plus `dresidual` when given (the gradient arriving through a residual branch).
  const FloatBuffer& backward(LayerContext& ctx, const FloatBuffer& dy, const FloatBuffer* dresidual = nullptr);

 private:
  Param scale_, bias_;
  std::size_t dims_;
  const FloatBuffer* x_ = nullptr;
  FloatBuffer y_, mean_, rstd_, dx_;
};

}  // namespace paxocl::models
