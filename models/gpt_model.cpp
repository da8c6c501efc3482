#include "models/gpt_model.h"

#include <fmt/format.h>

#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names;

GptModel::GptModel(kernels::DeviceRuntime& runtime, const GptConfig& config, ModelOptions options)
    : DecoderModel(runtime, config, options), config_(config) {
  const device::Device& device = runtime.device();
  const std::size_t rows = max_rows();
  const std::size_t C = config.model_dims, D = config.attention_dims(), H = config.hidden_dims;
  const device::DType act = runtime.act_dtype();
  begin_layers();
  embedding_ = std::make_unique<Embedding>(device, act, param(names::kTokenEmbedding), param(names::kPositionEmbedding), C, rows, "embedding");
  blocks_.reserve(static_cast<std::size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    auto name = [&](std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
    const std::string prefix = fmt::format("{}{}", names::kBlockPrefix, l);  // its layers' labels
    blocks_.emplace_back(
        device, act,
        LayerNorm(device, act, param(name(names::kLn1Scale)), param(name(names::kLn1Bias)), C, rows, prefix + ".ln1"),
        SelfAttention(
            Linear(device, act, param(name(names::kQkvWeight)), param(name(names::kQkvBias)), C, 3 * D, rows, prefix + ".qkv"),
            CausalAttention(device, act, static_cast<std::size_t>(config.num_heads),
                            static_cast<std::size_t>(config.num_heads),  // GPT: multi-head, no kv-head sharing
                            static_cast<std::size_t>(config.dims_per_head), options_.max_batch, options_.max_seq_len,
                            options_.attention_workspace_bytes, prefix + ".attn"),
            Linear(device, act, param(name(names::kAttnProjWeight)), param(name(names::kAttnProjBias)), D, C, rows, prefix + ".proj")),
        LayerNorm(device, act, param(name(names::kLn2Scale)), param(name(names::kLn2Bias)), C, rows, prefix + ".ln2"),
        Mlp(Linear(device, act, param(name(names::kFcWeight)), param(name(names::kFcBias)), C, H, rows, prefix + ".fc",
                   Linear::Activation::kGelu),
            Linear(device, act, param(name(names::kFcProjWeight)), param(name(names::kFcProjBias)), H, C, rows, prefix + ".fcproj")),
        C, rows, prefix);
  }
  final_norm_ = std::make_unique<LayerNorm>(device, act, param(names::kFinalNormScale), param(names::kFinalNormBias), C, rows, "lnf");
  head_ = std::make_unique<LmHead>(device, act, param(names::kTokenEmbedding), C, static_cast<std::size_t>(config.vocab_size),
                                       static_cast<std::size_t>(config.padded_vocab()), rows, "lm_head");
  end_layers();
}

}  // namespace paxocl::models
