// GptModel: Pax's GPT decoder on one OpenCL device; the first models::Model (model.h).
//   ids (B, T) -> Embedding (wte + wpe) -> NUM_LAYERS x GptBlock (transformer_block.h; each block's
//   mixer attention or the S4D SSM, BLOCK_KINDS) -> final
//   LayerNorm -> LmHead (logits = y wte^T, weighted mean softmax cross-entropy)
// The pass is DecoderModel's; parameters, gradients, FSDP residency and the activation-dtype copy of
// the weights are BlockModel's (block_model.h). Each layer receives views of its own tensors and
// never touches another layer's. It runs on a kernels::DeviceRuntime (device, kernels, GEMM), which
// it uses and does not own. Every GEMM and reduction accumulates in float32.
#pragma once

#include "models/decoder_model.h"
#include "models/gpt_config.h"
#include "models/layers/layer_norm.h"
#include "models/layers/transformer_block.h"

namespace paxocl::models {

class GptModel : public DecoderModel<GptBlock, LayerNorm> {
 public:
  GptModel(kernels::DeviceRuntime& runtime, const GptConfig& config, ModelOptions options);
  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
};

}  // namespace paxocl::models
