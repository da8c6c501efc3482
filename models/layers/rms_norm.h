// RMSNorm over the last dimension (LLaMA; eps 1e-5 by default, statistics in fp32).
//   x (N, C) -> y (N, C) = x * rstd * scale,  rstd = 1 / sqrt(mean_c(x^2) + eps);  rstd (N) kept for backward.
// LayerNorm's interface without the mean and the bias: forward remembers its input (x, or the
// residual sum); backward returns dx (N, C) and accumulates dscale (C). x, y, dx are in the
// activation dtype `act`; rstd and the parameter gradient are float32. N is
// LayerContext::stream_rows(): under sequence parallelism the device's shard of the rows.
#pragma once

#include <vector>

#include "models/layers/buffer_source.h"
#include "models/layers/layer_context.h"

namespace paxocl::models {

class RmsNorm {
 public:
  static constexpr float kDefaultEpsilon = 1e-5f;
  // Throws ConfigError for dims == 0 or eps not > 0 (1 / sqrt(0) on a zero row).
  // y and rstd are saved (the layer's site), dx transient (layers/buffer_source.h).
  RmsNorm(const BufferSource& buffers, device::DType act, Param scale, std::size_t dims, std::size_t max_rows,
          float eps, const std::string& name);

  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x);
  // Residual fusion: sum = x + delta (into the caller's buffer, which it keeps alive), y = RMSNorm(sum).
  const ActBuffer& forward_residual(LayerContext& ctx, const ActBuffer& x, const ActBuffer& delta, ActBuffer& sum);
  // dx = d RMSNorm(dy), plus `dresidual` when given (the gradient arriving through a residual branch);
  // dscale (C) += the parameter gradient (float32, accumulates).
  const ActBuffer& output() const { return y_; }  // the last forward's
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const ActBuffer* dresidual = nullptr);
  // dscale: what sequence parallelism sums over the tensor group (each device saw its rows).
  std::vector<FloatBuffer> parameter_gradients() const { return {scale_.grad}; }

 private:
  Param scale_;
  std::size_t dims_;
  float eps_;
  const ActBuffer* x_ = nullptr;
  ActBuffer y_;        // (N, C)
  FloatBuffer rstd_;   // (N)
  ActBuffer dx_;       // (N, C)
};

}  // namespace paxocl::models
