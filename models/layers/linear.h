// Linear: y = act(x W^T + b).      x (N, in)  W (out, in)  b (out)  y (N, out)
// act is the identity or GELU-tanh. The bias and GELU run in the GEMM's epilogue where it has one
// (gemm.h's GemmEpilogue: the direct GEMM on GPUs), else as one fused kernel after it.
// The bias is optional (LLaMA has none): without it y = act(x W^T) and there is no db.
// forward remembers x (the caller keeps it alive until backward); backward returns dx (N, in) and
// accumulates dW += dz^T x and db += colsum(dz), z the pre-activation. Activations are in the
// activation dtype `act`, W and b are read through Param::compute, dW and db are float32 sums.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "models/layers/buffer_source.h"
#include "models/layers/layer_context.h"

namespace paxocl::models {

class Linear {
 public:
  enum class Activation { kNone, kGelu };
  // z and the GELU output are saved (the layer's site), dx and dz transient (layers/buffer_source.h).
  Linear(const BufferSource& buffers, device::DType act, Param weight, std::optional<Param> bias, std::size_t in,
         std::size_t out, std::size_t max_rows, const std::string& name, Activation activation = Activation::kNone);

  // The output is the layer's own buffer; the caller may transform it in place (RoPE on the QKV
  // rows) before backward, which reads only x and, with GELU, the pre-activation it keeps apart.
  ActBuffer& forward(LayerContext& ctx, const ActBuffer& x);
  // dx is computed first; `after_dx` (if given) is called once dx's GEMM is enqueued, before the
  // weight gradient's, so a collective on dx (tensor parallelism) can overlap that GEMM.
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {});

  // A GELU between two layers (Mlp: fc's, whose output is proj's input) may be differentiated
  // inside the second one's dx GEMM (GemmEpilogue::gelu_grad): backward_through_gelu is backward
  // for a layer without activation whose dx GEMM also multiplies by gelu'(gelu_input), the first
  // layer's pre-activation, where the GEMM can; it returns whether it did (else dx() is the plain
  // input gradient). The first layer then continues from dx() with backward_from_preactivation
  // (its own GELU backward skipped), or with backward as usual.
  bool backward_through_gelu(LayerContext& ctx, const ActBuffer& dy, const ActBuffer& gelu_input);
  ActBuffer& backward_from_preactivation(LayerContext& ctx, const ActBuffer& dz,
                                         const std::function<void(ActBuffer&)>& after_dx = {});
  ActBuffer& output() { return activation_ == Activation::kGelu ? activated_ : z_; }  // forward's result
  const ActBuffer& preactivation() const { return z_; }  // z (N, out), valid from forward to backward
  ActBuffer& dx() { return dx_; }                         // (N, in), the last backward's

 private:
  // backward from dz, the gradient at z; dx_gelu_input / dx_fused: backward_through_gelu's.
  ActBuffer& backward_at_z(LayerContext& ctx, const ActBuffer& dz, const std::function<void(ActBuffer&)>& after_dx,
                           const ActBuffer* dx_gelu_input, bool* dx_fused = nullptr);

  Param weight_;
  std::optional<Param> bias_;
  std::size_t in_, out_;
  Activation activation_;
  const ActBuffer* x_ = nullptr;
  ActBuffer z_, dx_;           // pre-activation (the output without activation), input gradient
  ActBuffer activated_, dz_;   // GELU only: act(z), and the gradient at z
};

}  // namespace paxocl::models
