#include "models/gpt_model.h"

#include <fmt/format.h>

#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names;

GptModel::GptModel(kernels::DeviceRuntime& runtime, const GptConfig& config, ModelOptions options)
    : DecoderModel(runtime, config, options, static_cast<std::size_t>(config.model_dims)), config_(config) {
  const device::Device& device = runtime.device();
  // rows: every layer's; stream: the blocks' residual stream and the norms' (under sequence
  // parallelism the device's shard of the rows).
  const std::size_t rows = max_rows(), stream = stream_rows();
  // Under tensor parallelism this device's heads, hidden units and vocabulary rows (tensor_split.h);
  // the row-parallel biases and wpe exist on rank 0 only.
  const TensorLocalDims local = tensor_local_dims(config, options.tensor);
  const auto NH = static_cast<std::size_t>(local.heads);
  const std::size_t C = config.model_dims, D = NH * static_cast<std::size_t>(config.dims_per_head),
                    H = static_cast<std::size_t>(local.hidden);
  auto rank0_param = [&](const std::string& tensor) -> std::optional<Param> {
    if (!local.rank0_tensors) return std::nullopt;
    return param(tensor);
  };
  const device::DType act = runtime.act_dtype();
  begin_layers();
  if (stage().first_stage()) {  // a pipeline stage holds its own layers only
    embedding_ = std::make_unique<Embedding>(
        device, act, param(names::kTokenEmbedding), rank0_param(std::string(names::kPositionEmbedding)), C, rows,
        "embedding", VocabRange{static_cast<std::size_t>(local.vocab_begin), static_cast<std::size_t>(local.vocab_rows)});
  }
  blocks_.reserve(static_cast<std::size_t>(stage().blocks()));
  for (int l = stage().first; l < stage().end; ++l) {
    auto name = [&](std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
    const std::string prefix = fmt::format("{}{}", names::kBlockPrefix, l);  // its layers' labels
    auto at = [&](BlockSite site) { return block_buffers(prefix, site); };
    auto mixer = [&]() -> TokenMixer {
      if (config.block_kind(l) == BlockKind::kSsm) {  // replicated under tensor parallelism: whole widths
        return TokenMixer(Ssm(at(BlockSite::kSsm), act, param(name(names::kSsmCRe)), param(name(names::kSsmCIm)),
                              param(name(names::kSsmD)), config.ssm, C, options_.max_batch, options_.max_seq_len,
                              prefix + ".ssm"));
      }
      return TokenMixer(SelfAttention(
          Linear(at(BlockSite::kQkvProj), act, param(name(names::kQkvWeight)), param(name(names::kQkvBias)), C, 3 * D,
                 rows, prefix + ".qkv"),
          CausalAttention(at(BlockSite::kContext), act, NH, NH,  // GPT: multi-head, no kv-head sharing
                          static_cast<std::size_t>(config.dims_per_head), options_.max_batch, options_.max_seq_len,
                          options_.attention_workspace_bytes, prefix + ".attn"),
          Linear(at(BlockSite::kOutProj), act, param(name(names::kAttnProjWeight)),
                 rank0_param(name(names::kAttnProjBias)), D, C, rows, prefix + ".proj")));
    };
    blocks_.emplace_back(
        at(BlockSite::kLayerOut), act,
        LayerNorm(at(BlockSite::kNorm1), act, param(name(names::kLn1Scale)), param(name(names::kLn1Bias)), C, stream,
                  prefix + ".ln1"),
        mixer(),
        LayerNorm(at(BlockSite::kNorm2), act, param(name(names::kLn2Scale)), param(name(names::kLn2Bias)), C, stream,
                  prefix + ".ln2"),
        Mlp(Linear(at(BlockSite::kFfn1), act, param(name(names::kFcWeight)), param(name(names::kFcBias)), C, H, rows,
                   prefix + ".fc", Linear::Activation::kGelu),
            Linear(at(BlockSite::kFfn2), act, param(name(names::kFcProjWeight)), rank0_param(name(names::kFcProjBias)),
                   H, C, rows, prefix + ".fcproj")),
        C, stream, prefix);
  }
  if (stage().last_stage()) {
    final_norm_ = std::make_unique<LayerNorm>(device, act, param(names::kFinalNormScale), param(names::kFinalNormBias), C,
                                              stream, "lnf");
    head_ = std::make_unique<LmHead>(device, act, param(names::kTokenEmbedding), C, static_cast<std::size_t>(local.vocab_real),
                                     static_cast<std::size_t>(local.vocab_rows), rows, "lm_head",
                                     VocabShard{static_cast<std::size_t>(local.vocab_begin), options.tensor.size,
                                                        options.tensor.rank});
  }
  end_layers();
}

}  // namespace paxocl::models
