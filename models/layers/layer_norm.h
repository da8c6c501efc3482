// LayerNorm over the last dimension (eps 1e-5, statistics in fp32).
//   x (N, C) -> y (N, C) = (x - mean) * rstd * scale + bias;  mean, rstd (N) kept for backward.
// forward remembers its input (x, or the residual sum); backward returns dx (N, C) and
// accumulates dscale, dbias (C). x, y, dx are in the activation dtype `act`; mean, rstd and the
// parameter gradients are float32. N is LayerContext::stream_rows(): under sequence parallelism the
// device's shard of the rows.
#pragma once

#include <vector>

#include "models/gpt_config.h"
#include "models/layers/buffer_source.h"
#include "models/layers/layer_context.h"

namespace paxocl::models {

class LayerNorm {
 public:
  static constexpr float kEpsilon = GptConfig::kLayerNormEpsilon;
  // y, mean and rstd are saved (the layer's site), dx transient (layers/buffer_source.h).
  LayerNorm(const BufferSource& buffers, device::DType act, Param scale, Param bias, std::size_t dims,
            std::size_t max_rows, const std::string& name);

  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x);
  // Residual fusion: sum = x + delta (into the caller's buffer, which it keeps alive), y = LN(sum).
  const ActBuffer& forward_residual(LayerContext& ctx, const ActBuffer& x, const ActBuffer& delta, ActBuffer& sum);
  // dx = d LN(dy), plus `dresidual` when given (the gradient arriving through a residual branch).
  const ActBuffer& output() const { return y_; }  // the last forward's
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const ActBuffer* dresidual = nullptr);
  // dscale, dbias: what sequence parallelism sums over the tensor group (each device saw its rows).
  std::vector<FloatBuffer> parameter_gradients() const { return {scale_.grad, bias_.grad}; }

 private:
  Param scale_, bias_;
  std::size_t dims_;
  const ActBuffer* x_ = nullptr;
  ActBuffer y_;
  FloatBuffer mean_, rstd_;
  ActBuffer dx_;
};

}  // namespace paxocl::models
