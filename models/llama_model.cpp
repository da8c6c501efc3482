#include "models/llama_model.h"

#include <fmt/format.h>

#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names::llama;

LlamaModel::LlamaModel(kernels::DeviceRuntime& runtime, const LlamaConfig& config, ModelOptions options)
    : DecoderModel(runtime, config, options), config_(config) {
  const device::Device& device = runtime.device();
  const std::size_t rows = max_rows();
  const std::size_t C = config.model_dims, F = config.hidden_dims, H = config.num_heads, Hkv = config.num_kv_heads,
                    hs = config.dims_per_head;
  const device::DType act = runtime.act_dtype();
  const float eps = config.norm_epsilon;
  begin_layers();
  // One rotary layer for every block: it holds only its cos/sin tables.
  auto rope = std::make_shared<RotaryEmbedding>(device, H, Hkv, hs, config.rope_base, options_.max_seq_len, "rope");
  embedding_ = std::make_unique<Embedding>(device, act, param(names::kTokenEmbedding), std::nullopt, C, rows, "embedding");
  blocks_.reserve(static_cast<std::size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    auto name = [&](std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
    const std::string prefix = fmt::format("{}{}", tensor_names::kBlockPrefix, l);
    blocks_.emplace_back(
        device, act, RmsNorm(device, act, param(name(names::kAttnNormScale)), C, rows, eps, prefix + ".attn_norm"),
        SelfAttention(
            Linear(device, act, param(name(names::kQkvWeight)), std::nullopt, C, (H + 2 * Hkv) * hs, rows, prefix + ".qkv"),
            CausalAttention(device, act, H, Hkv, hs, options_.max_batch, options_.max_seq_len,
                            options_.attention_workspace_bytes, prefix + ".attn"),
            Linear(device, act, param(name(names::kAttnProjWeight)), std::nullopt, H * hs, C, rows, prefix + ".proj"),
            rope),
        RmsNorm(device, act, param(name(names::kMlpNormScale)), C, rows, eps, prefix + ".mlp_norm"),
        SwigluMlp(device, act, param(name(names::kGateUpWeight)), param(name(names::kDownWeight)), C, F, rows,
                  prefix + ".mlp"),
        C, rows, prefix);
  }
  final_norm_ = std::make_unique<RmsNorm>(device, act, param(names::kFinalNormScale), C, rows, eps, "norm");
  head_ = std::make_unique<LmHead>(device, act, param(names::kLmHead), C, static_cast<std::size_t>(config.vocab_size),
                                       static_cast<std::size_t>(config.padded_vocab()), rows, "lm_head");
  end_layers();
}

}  // namespace paxocl::models
