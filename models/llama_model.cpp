#include "models/llama_model.h"

#include <fmt/format.h>

#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names::llama;

LlamaModel::LlamaModel(kernels::DeviceRuntime& runtime, const LlamaConfig& config, ModelOptions options)
    : DecoderModel(runtime, config, options, static_cast<std::size_t>(config.model_dims)), config_(config) {
  const device::Device& device = runtime.device();
  // rows: every layer's; stream: the blocks' residual stream and the norms' (under sequence
  // parallelism the device's shard of the rows).
  const std::size_t rows = max_rows(), stream = stream_rows();
  // Under tensor parallelism this device's heads, hidden units and vocabulary rows (tensor_split.h).
  const TensorLocalDims local = tensor_local_dims(config, options.tensor);
  const std::size_t C = config.model_dims, F = static_cast<std::size_t>(local.hidden),
                    H = static_cast<std::size_t>(local.heads), Hkv = static_cast<std::size_t>(local.kv_heads),
                    hs = config.dims_per_head;
  const VocabRange vocab{static_cast<std::size_t>(local.vocab_begin), static_cast<std::size_t>(local.vocab_rows)};
  const device::DType act = runtime.act_dtype();
  const float eps = config.norm_epsilon;
  begin_layers();
  // One rotary layer for every block: it holds only its cos/sin tables.
  auto rope = std::make_shared<RotaryEmbedding>(device, H, Hkv, hs, config.rope_base, options_.max_seq_len, "rope");
  if (stage().first_stage()) {  // a pipeline stage holds its own layers only
    embedding_ = std::make_unique<Embedding>(device, act, param(names::kTokenEmbedding), std::nullopt, C, rows, "embedding",
                                             vocab);
  }
  blocks_.reserve(static_cast<std::size_t>(stage().blocks()));
  for (int l = stage().first; l < stage().end; ++l) {
    auto name = [&](std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
    const std::string prefix = fmt::format("{}{}", tensor_names::kBlockPrefix, l);
    auto at = [&](BlockSite site) { return block_buffers(prefix, site); };
    std::optional<KvReplicas> kv_replicas;
    if (local.kv_replicated) {
      const Param qkv = param(name(names::kQkvWeight));
      kv_replicas = KvReplicas{qkv.grad, H * hs, hs, C, local.kv_head_begin, config.num_kv_heads,
                               at(BlockSite::kQkvProj).transient(2 * static_cast<std::size_t>(config.num_kv_heads) * hs * C,
                                                                 prefix + ".kv_replicas")};
    }
    blocks_.emplace_back(
        at(BlockSite::kLayerOut), act,
        RmsNorm(at(BlockSite::kNorm1), act, param(name(names::kAttnNormScale)), C, stream, eps, prefix + ".attn_norm"),
        SelfAttention(
            Linear(at(BlockSite::kQkvProj), act, param(name(names::kQkvWeight)), std::nullopt, C, (H + 2 * Hkv) * hs, rows,
                   prefix + ".qkv"),
            CausalAttention(at(BlockSite::kContext), act, H, Hkv, hs, options_.max_batch, options_.max_seq_len,
                            options_.attention_workspace_bytes, prefix + ".attn"),
            Linear(at(BlockSite::kOutProj), act, param(name(names::kAttnProjWeight)), std::nullopt, H * hs, C, rows,
                   prefix + ".proj"),
            rope, std::move(kv_replicas)),
        RmsNorm(at(BlockSite::kNorm2), act, param(name(names::kMlpNormScale)), C, stream, eps, prefix + ".mlp_norm"),
        SwigluMlp(at(BlockSite::kFfn1), act, param(name(names::kGateUpWeight)), param(name(names::kDownWeight)), C, F, rows,
                  prefix + ".mlp"),
        C, stream, prefix);
  }
  if (stage().last_stage()) {
    final_norm_ = std::make_unique<RmsNorm>(device, act, param(names::kFinalNormScale), C, stream, eps, "norm");
    head_ = std::make_unique<LmHead>(device, act, param(names::kLmHead), C, static_cast<std::size_t>(local.vocab_real),
                                     static_cast<std::size_t>(local.vocab_rows), rows, "lm_head",
                                     VocabShard{vocab.begin, options.tensor.size, options.tensor.rank});
  }
  end_layers();
}

}  // namespace paxocl::models
