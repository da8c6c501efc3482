// GptModel: Pax's GPT decoder on one OpenCL device; the first models::Model (model.h).
//   ids (B, T) -> Embedding (wte + wpe) -> NUM_LAYERS x GptBlock (transformer_block.h) -> final LayerNorm
//   -> TiedLmHead (logits = y wte^T, weighted mean softmax cross-entropy)
// Parameters, gradients, FSDP residency and the activation-dtype copy of the weights are
// BlockModel's (block_model.h); each layer receives views of its own tensors and never touches
// another layer's. It runs on a kernels::DeviceRuntime (device, kernels, GEMM), which it uses and
// does not own. Every GEMM and reduction accumulates in float32.
#pragma once

#include <memory>
#include <vector>

#include "models/block_model.h"
#include "models/gpt_config.h"
#include "models/layers/embedding.h"
#include "models/layers/layer_norm.h"
#include "models/layers/tied_lm_head.h"
#include "models/layers/transformer_block.h"

namespace paxocl::models {

class GptModel : public BlockModel {
 public:
  GptModel(kernels::DeviceRuntime& runtime, const GptConfig& config, ModelOptions options);

  Pass begin_pass(const inputs::Batch& batch, bool gradients) override;
  void forward_block(Pass& pass, int block) override;
  LossStats forward_loss(Pass& pass) override;
  void begin_backward(Pass& pass) override;
  void backward_block(Pass& pass, int block) override;
  void finish_backward(Pass& pass) override;

  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
  std::unique_ptr<Embedding> embedding_;
  std::vector<GptBlock> blocks_;
  std::unique_ptr<LayerNorm> final_norm_;
  std::unique_ptr<TiedLmHead> head_;
};

}  // namespace paxocl::models
