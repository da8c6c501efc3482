#include "models/layers/linear.h"


namespace paxocl::models {

using kernels::GemmShape;
using kernels::Transpose;

Linear::Linear(const device::Device& device, device::DType act, Param weight, std::optional<Param> bias,
               std::size_t in, std::size_t out, std::size_t max_rows, const std::string& name, Activation activation)
    : weight_(std::move(weight)),
      bias_(std::move(bias)),
      in_(in),
      out_(out),
      activation_(activation),
      z_(make_buffer(device, act, max_rows * out, name + ".z")),
      dx_(make_buffer(device, act, max_rows * in, name + ".dx")) {
  if (activation == Activation::kGelu) {
    activated_ = make_buffer(device, act, max_rows * out, name + ".gelu");
    dz_ = make_buffer(device, act, max_rows * out, name + ".dz");
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

ActBuffer& Linear::backward(LayerContext& ctx, const ActBuffer& dy_in, const std::function<void(ActBuffer&)>& after_dx) {
  const std::size_t N = ctx.rows();
  const ActBuffer* dz = &dy_in;
  if (activation_ == Activation::kGelu) {
    ctx.kernels.gelu.backward(dz_, z_, dy_in, N * out_);
    dz = &dz_;
  }
  const ActBuffer& dy = *dz;
  // dx (N, in) = dz (N, out) * W (out, in)
  ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, N, in_, out_}, 1.0f, operand(dy, 0, out_),
               operand(weight_.compute, 0, in_), 0.0f, operand(dx_, 0, in_));
  if (after_dx) after_dx(dx_);
  // dW (out, in) += dz^T (out, N) * x (N, in), accumulated in float32
  ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, out_, in_, N}, 1.0f, operand(dy, 0, out_),
               operand(*x_, 0, in_), 1.0f, operand(weight_.grad, 0, in_));
  if (bias_) ctx.kernels.bias.grad(bias_->grad, dy, N, out_);
  return dx_;
}

}  // namespace paxocl::models
