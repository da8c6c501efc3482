// TiedLmHead: logits = y wte^T over the padded vocabulary, then the fused softmax cross-entropy
// with per-token weights; the loss is the weighted mean  sum(w * ce) / sum(w)  (0 when sum(w) = 0).
//   y (N, C), wte (Vp, C) shared with the Embedding, logits (N, Vp), targets, weights (N)
// forward computes the loss and, fused, dlogits; backward returns dy (N, C) and accumulates dwte.
#pragma once

#include <vector>

#include "models/layers/layer_context.h"

namespace paxocl::models {

class TiedLmHead {
 public:
  TiedLmHead(const device::Device& device, Param wte, std::size_t dims, std::size_t vocab, std::size_t padded_vocab,
             std::size_t max_rows, const std::string& name);

  // Returns the weighted mean loss (summed on the host in double, in a fixed order).
  double forward(LayerContext& ctx, const FloatBuffer& y, const std::vector<int>& targets,
                 const std::vector<float>& weights);
  const FloatBuffer& backward(LayerContext& ctx);

 private:
  Param wte_;
  std::size_t dims_, vocab_, padded_vocab_;
  const FloatBuffer* y_ = nullptr;
  FloatBuffer logits_, losses_, weights_, dy_;
  device::Buffer<cl_int> targets_;
};

}  // namespace paxocl::models
