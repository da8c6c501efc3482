#include "models/llama_config.h"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/parameter_layout.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names::llama;

void LlamaConfig::validate() const {
  auto positive = [](const char* name, int value) { check_dimension(name, value, kMaxDimension); };
  positive("NUM_LAYERS", num_layers);
  positive("MODEL_DIMS", model_dims);
  positive("HIDDEN_DIMS", hidden_dims);
  positive("NUM_HEADS", num_heads);
  positive("NUM_KV_HEADS", num_kv_heads);
  positive("DIMS_PER_HEAD", dims_per_head);
  positive("MAX_SEQ_LEN", max_seq_len);
  positive("VOCAB_SIZE", vocab_size);
  if (num_heads % num_kv_heads != 0) {
    throw ConfigError(fmt::format("NUM_KV_HEADS={} must divide NUM_HEADS={} (each group of query heads shares one "
                                  "key/value head)", num_kv_heads, num_heads));
  }
  if (dims_per_head % 2 != 0) {
    throw ConfigError(fmt::format("DIMS_PER_HEAD={}: must be even (rotary embeddings rotate pairs of dimensions)",
                                  dims_per_head));
  }
  if (static_cast<std::int64_t>(num_heads + 2 * num_kv_heads) * dims_per_head > kMaxDimension ||
      2 * static_cast<std::int64_t>(hidden_dims) > kMaxDimension) {
    throw ConfigError(fmt::format("NUM_HEADS={} NUM_KV_HEADS={} DIMS_PER_HEAD={} HIDDEN_DIMS={}: a fused projection "
                                  "would exceed {} rows", num_heads, num_kv_heads, dims_per_head, hidden_dims,
                                  kMaxDimension));
  }
  if (padded_vocab_size < 0 || padded_vocab_size > kMaxDimension) {
    throw ConfigError(fmt::format("padded vocabulary {}: must be in [0, {}]", padded_vocab_size, kMaxDimension));
  }
  if (padded_vocab_size != 0 && padded_vocab_size < vocab_size) {
    throw ConfigError(fmt::format("padded vocabulary {} is smaller than VOCAB_SIZE={}", padded_vocab_size, vocab_size));
  }
  if (!(init_std > 0.0f) || !std::isfinite(init_std)) throw ConfigError(fmt::format("INIT_STD={}: must be positive", init_std));
  if (!(rope_base > 1.0f) || !std::isfinite(rope_base)) {
    throw ConfigError(fmt::format("ROPE_BASE={}: must be a finite number above 1", rope_base));
  }
  if (!(norm_epsilon > 0.0f) || !std::isfinite(norm_epsilon)) {
    throw ConfigError(fmt::format("NORM_EPSILON={}: must be positive", norm_epsilon));
  }
}

std::int64_t LlamaConfig::matmul_parameters() const {
  const std::int64_t C = model_dims, F = hidden_dims;
  return static_cast<std::int64_t>(num_layers) * (C * qkv_dims() + static_cast<std::int64_t>(attention_dims()) * C + 3 * C * F) +
         static_cast<std::int64_t>(padded_vocab()) * C;
}

double LlamaConfig::flops_per_token(int seq_len) const {
  return 6.0 * static_cast<double>(matmul_parameters()) +
         12.0 * num_layers * static_cast<double>(seq_len) * attention_dims();
}

std::string LlamaConfig::describe() const {
  return fmt::format("L={} C={} F={} H={} KV={} hs={} V={} (Vp={}) rope_base={} eps={}", num_layers, model_dims,
                     hidden_dims, num_heads, num_kv_heads, dims_per_head, vocab_size, padded_vocab(), rope_base,
                     norm_epsilon);
}

std::vector<TensorDef> tensor_defs_of(const LlamaConfig& c) {
  c.validate();
  const std::int64_t C = c.model_dims, F = c.hidden_dims, Vp = c.padded_vocab();
  using Init = TensorSpec::Init;
  std::vector<TensorDef> defs;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, bool decay, Init init, int block) {
    defs.push_back(TensorDef{std::move(name), std::move(shape), decay, init, block});
  };
  auto layer = [](int l, std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
  add(std::string(names::kTokenEmbedding), {Vp, C}, true, Init::kGaussian, -1);
  add(std::string(names::kLmHead), {Vp, C}, true, Init::kGaussian, -1);
  for (int l = 0; l < c.num_layers; ++l) {
    add(layer(l, names::kQkvWeight), {c.qkv_dims(), C}, true, Init::kGaussian, l);
    add(layer(l, names::kAttnProjWeight), {C, c.attention_dims()}, true, Init::kGaussian, l);
    add(layer(l, names::kGateUpWeight), {2 * F, C}, true, Init::kGaussian, l);
    add(layer(l, names::kDownWeight), {C, F}, true, Init::kGaussian, l);
  }
  for (int l = 0; l < c.num_layers; ++l) {
    add(layer(l, names::kAttnNormScale), {C}, false, Init::kOne, l);
    add(layer(l, names::kMlpNormScale), {C}, false, Init::kOne, l);
  }
  add(std::string(names::kFinalNormScale), {C}, false, Init::kOne, -1);
  return defs;
}

}  // namespace paxocl::models
