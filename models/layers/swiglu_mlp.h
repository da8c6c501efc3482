// SwigluMlp: LLaMA's feed-forward block, no biases.
//   gu (N, 2F) = x (N, C) W_gu^T     W_gu (2F, C): rows [gate (F) | up (F)], one fused GEMM
//   h  (N, F)  = silu(gate) * up     (kernels_cl/swiglu.cl)
//   y  (N, C)  = h W_down^T          W_down (C, F)
// Hugging Face's gate_proj and up_proj are W_gu's two halves (the weight-file code splits them).
// forward remembers x (the caller keeps it alive until backward); backward returns dx (N, C) and
// accumulates dW_gu and dW_down (float32). Activations are in the activation dtype `act`, the
// weights are read through Param::compute.
#pragma once

#include <string>

#include "models/layers/linear.h"

namespace paxocl::models {

class SwigluMlp {
 public:
  // Throws ConfigError for dims == 0 or hidden == 0.
  // `buffers` is the ffn1 site's (gate_up and h; down stores at ffn2), layers/buffer_source.h.
  SwigluMlp(const BufferSource& buffers, device::DType act, Param gate_up_weight, Param down_weight,
            std::size_t dims, std::size_t hidden, std::size_t max_rows, const std::string& name);

  ActBuffer& forward(LayerContext& ctx, const ActBuffer& x);   // (N, C) -> (N, C)
  // The forward up to the ffn1 site (gate_up and h), which rematerialization recomputes; returns h.
  ActBuffer& hidden(LayerContext& ctx, const ActBuffer& x);
  // -> dx (N, C); after_dx: as Linear::backward's.
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {});

 private:
  std::size_t hidden_;
  Linear gate_up_, down_;
  const ActBuffer* gu_ = nullptr;  // (N, 2F): gate_up_'s output, kept for backward
  ActBuffer h_;                    // (N, F)
  ActBuffer dgu_;                  // (N, 2F)
};

}  // namespace paxocl::models
