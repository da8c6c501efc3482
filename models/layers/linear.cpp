#include "models/layers/linear.h"

#include <stdexcept>


namespace paxocl::models {

using kernels::GemmShape;
using kernels::Transpose;

Linear::Linear(const BufferSource& buffers, device::DType act, Param weight, std::optional<Param> bias,
               std::size_t in, std::size_t out, std::size_t max_rows, const std::string& name, Activation activation)
    : weight_(std::move(weight)),
      bias_(std::move(bias)),
      in_(in),
      out_(out),
      activation_(activation),
      z_(buffers.saved(act, max_rows * out, name + ".z")),
      dx_(buffers.transient(act, max_rows * in, name + ".dx")) {
  if (activation == Activation::kGelu) {
    activated_ = buffers.saved(act, max_rows * out, name + ".gelu");
    dz_ = buffers.transient(act, max_rows * out, name + ".dz");
  }
}

ActBuffer& Linear::forward(LayerContext& ctx, const ActBuffer& x) {
  x_ = &x;
  const std::size_t N = ctx.rows();
  // z (N, out) = x (N, in) * W^T (+ b), and with GELU act(z): in the GEMM's epilogue where it has
  // one (the direct GEMM on GPUs), else by the element-wise kernels after it.
  const GemmShape shape{Transpose::kNo, Transpose::kYes, N, out_, in_};
  const bool gelu = activation_ == Activation::kGelu;
  kernels::GemmEpilogue epilogue;
  if (bias_) epilogue.bias = operand(bias_->compute, 0, out_);
  if (gelu) epilogue.gelu = operand(activated_, 0, out_);
  ActBuffer& y = gelu ? activated_ : z_;
  if ((bias_ || gelu) && ctx.gemm.run_fused(shape, 1.0f, operand(x, 0, in_), operand(weight_.compute, 0, in_), 0.0f,
                                            operand(z_, 0, out_), epilogue)) {
    return y;
  }
  ctx.gemm.run(shape, 1.0f, operand(x, 0, in_), operand(weight_.compute, 0, in_), 0.0f, operand(z_, 0, out_));
  if (gelu && bias_) {
    ctx.kernels.gelu.bias_forward(z_, activated_, bias_->compute, N, out_);
  } else if (gelu) {
    ctx.kernels.gelu.forward(activated_, z_, N * out_);
  } else if (bias_) {
    ctx.kernels.bias.add(z_, bias_->compute, N, out_);
  }
  return y;
}

ActBuffer& Linear::backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx) {
  if (activation_ != Activation::kGelu) return backward_at_z(ctx, dy, after_dx, nullptr);
  ctx.kernels.gelu.backward(dz_, z_, dy, ctx.rows() * out_);
  return backward_at_z(ctx, dz_, after_dx, nullptr);
}

ActBuffer& Linear::backward_from_preactivation(LayerContext& ctx, const ActBuffer& dz,
                                               const std::function<void(ActBuffer&)>& after_dx) {
  return backward_at_z(ctx, dz, after_dx, nullptr);
}

bool Linear::backward_through_gelu(LayerContext& ctx, const ActBuffer& dy, const ActBuffer& gelu_input) {
  if (activation_ == Activation::kGelu) throw std::logic_error("backward_through_gelu: the GELU is this layer's input's");
  bool fused = false;
  backward_at_z(ctx, dy, {}, &gelu_input, &fused);
  return fused;
}

ActBuffer& Linear::backward_at_z(LayerContext& ctx, const ActBuffer& dz, const std::function<void(ActBuffer&)>& after_dx,
                                 const ActBuffer* dx_gelu_input, bool* dx_fused) {
  const std::size_t N = ctx.rows();
  // dx (N, in) = dz (N, out) * W (out, in), times gelu'(dx_gelu_input) where the GEMM's epilogue can
  const GemmShape dx_shape{Transpose::kNo, Transpose::kNo, N, in_, out_};
  bool fused = false;
  if (dx_gelu_input) {
    kernels::GemmEpilogue epilogue;
    epilogue.gelu_grad = operand(*dx_gelu_input, 0, in_);
    fused = ctx.gemm.run_fused(dx_shape, 1.0f, operand(dz, 0, out_), operand(weight_.compute, 0, in_), 0.0f,
                               operand(dx_, 0, in_), epilogue);
  }
  if (!fused) {
    ctx.gemm.run(dx_shape, 1.0f, operand(dz, 0, out_), operand(weight_.compute, 0, in_), 0.0f, operand(dx_, 0, in_));
  }
  if (dx_fused) *dx_fused = fused;
  if (after_dx) after_dx(dx_);
  // dW (out, in) += dz^T (out, N) * x (N, in), accumulated in float32
  ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, out_, in_, N}, 1.0f, operand(dz, 0, out_),
               operand(*x_, 0, in_), 1.0f, operand(weight_.grad, 0, in_));
  if (bias_) ctx.kernels.bias.grad(bias_->grad, dz, N, out_);
  return dx_;
}

}  // namespace paxocl::models
