#include "models/layers/rms_norm.h"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {
std::size_t checked_dims(std::size_t dims, float eps, const std::string& name) {
  if (dims == 0) throw ConfigError(fmt::format("{}: RMSNorm needs at least one dimension", name));
  if (!(eps > 0.0f) || !std::isfinite(eps)) {
    throw ConfigError(fmt::format("{}: RMSNorm epsilon must be a positive number, got {}", name, eps));
  }
  return dims;
}
}  // namespace

RmsNorm::RmsNorm(const BufferSource& buffers, device::DType act, Param scale, std::size_t dims, std::size_t max_rows,
                 float eps, const std::string& name)
    : scale_(std::move(scale)),
      dims_(checked_dims(dims, eps, name)),
      eps_(eps),
      y_(buffers.saved(act, max_rows * dims, name + ".y")),
      rstd_(buffers.saved(max_rows, name + ".rstd")),
      dx_(buffers.transient(act, max_rows * dims, name + ".dx")) {}

const ActBuffer& RmsNorm::forward(LayerContext& ctx, const ActBuffer& x) {
  x_ = &x;
  ctx.kernels.rmsnorm.forward(y_, rstd_, x, scale_.compute, ctx.stream_rows(), dims_, eps_);
  return y_;
}

const ActBuffer& RmsNorm::forward_residual(LayerContext& ctx, const ActBuffer& x, const ActBuffer& delta,
                                           ActBuffer& sum) {
  x_ = &sum;
  ctx.kernels.rmsnorm.forward_residual(y_, rstd_, sum, x, delta, scale_.compute, ctx.stream_rows(), dims_, eps_);
  return y_;
}

const ActBuffer& RmsNorm::backward(LayerContext& ctx, const ActBuffer& dy, const ActBuffer* dresidual) {
  ctx.kernels.rmsnorm.backward(dx_, scale_.grad, dy, *x_, scale_.compute, rstd_, dresidual, ctx.stream_rows(), dims_);
  return dx_;
}

}  // namespace paxocl::models
