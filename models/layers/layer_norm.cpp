#include "models/layers/layer_norm.h"


namespace paxocl::models {

LayerNorm::LayerNorm(const BufferSource& buffers, device::DType act, Param scale, Param bias, std::size_t dims,
                     std::size_t max_rows, const std::string& name)
    : scale_(std::move(scale)),
      bias_(std::move(bias)),
      dims_(dims),
      y_(buffers.saved(act, max_rows * dims, name + ".y")),
      mean_(buffers.saved(max_rows, name + ".mean")),
      rstd_(buffers.saved(max_rows, name + ".rstd")),
      dx_(buffers.transient(act, max_rows * dims, name + ".dx")) {}

const ActBuffer& LayerNorm::forward(LayerContext& ctx, const ActBuffer& x) {
  x_ = &x;
  ctx.kernels.layernorm.forward(y_, mean_, rstd_, x, scale_.compute, bias_.compute, ctx.stream_rows(), dims_, kEpsilon);
  return y_;
}

const ActBuffer& LayerNorm::forward_residual(LayerContext& ctx, const ActBuffer& x, const ActBuffer& delta,
                                             ActBuffer& sum) {
  x_ = &sum;
  ctx.kernels.layernorm.forward_residual(y_, mean_, rstd_, sum, x, delta, scale_.compute, bias_.compute,
                                         ctx.stream_rows(), dims_, kEpsilon);
  return y_;
}

const ActBuffer& LayerNorm::backward(LayerContext& ctx, const ActBuffer& dy, const ActBuffer* dresidual) {
  ctx.kernels.layernorm.backward(dx_, scale_.grad, bias_.grad, dy, *x_, scale_.compute, mean_, rstd_, dresidual,
                                 ctx.stream_rows(), dims_);
  return dx_;
}

}  // namespace paxocl::models
