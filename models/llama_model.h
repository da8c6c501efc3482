// LlamaModel: the LLaMA family on one OpenCL device (llama_config.h).
//   ids (B, T) -> Embedding (embed, no position table) -> NUM_LAYERS x LlamaBlock -> RMSNorm
//   -> the untied LM head (logits = y lm_head^T, weighted mean softmax cross-entropy)
// LlamaBlock (transformer_block.h): x2 = x + proj(attention(RoPE(qkv(RMSNorm(x)))));
// y = x2 + down(silu(gate) * up)(RMSNorm(x2)); grouped-query attention, no biases. The pass is
// DecoderModel's, the parameters BlockModel's, as for GptModel.
#pragma once

#include "models/decoder_model.h"
#include "models/layers/rms_norm.h"
#include "models/layers/transformer_block.h"
#include "models/llama_config.h"

namespace paxocl::models {

class LlamaModel : public DecoderModel<LlamaBlock, RmsNorm> {
 public:
  LlamaModel(kernels::DeviceRuntime& runtime, const LlamaConfig& config, ModelOptions options);
  const LlamaConfig& config() const { return config_; }

 private:
  LlamaConfig config_;
};

}  // namespace paxocl::models
