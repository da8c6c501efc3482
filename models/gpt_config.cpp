#include "models/gpt_config.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "models/parameter_layout.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names;

void check_dimension(const char* name, int value, int max) {
  if (value < 1) throw ConfigError(fmt::format("{}={}: must be at least 1", name, value));
  if (value > max) throw ConfigError(fmt::format("{}={}: must be at most {}", name, value, max));
}

std::vector<BlockKind> parse_block_kinds(std::string_view text) {
  std::string_view body = text;
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']') body = body.substr(1, body.size() - 2);
  std::vector<BlockKind> kinds;
  while (true) {
    const std::size_t comma = body.find(',');
    std::string_view item = body.substr(0, comma);
    const auto blank = [](char ch) { return ch == ' ' || ch == '\'' || ch == '"'; };
    while (!item.empty() && blank(item.front())) item.remove_prefix(1);
    while (!item.empty() && blank(item.back())) item.remove_suffix(1);
    if (item == "attention") {
      kinds.push_back(BlockKind::kAttention);
    } else if (item == "ssm") {
      kinds.push_back(BlockKind::kSsm);
    } else {
      throw ConfigError(fmt::format("BLOCK_KINDS={}: '{}' is not a block kind; list attention or ssm per block, e.g. "
                                    "attention,ssm (repeated over NUM_LAYERS)", text, item));
    }
    if (comma == std::string_view::npos) break;
    body.remove_prefix(comma + 1);
  }
  return kinds;
}

std::string block_kinds_text(const std::vector<BlockKind>& kinds) {
  std::vector<std::string_view> words;
  for (BlockKind k : kinds) words.push_back(k == BlockKind::kSsm ? "ssm" : "attention");
  return fmt::format("{}", fmt::join(words, ","));
}

int GptConfig::ssm_blocks() const {
  int n = 0;
  for (int l = 0; l < num_layers; ++l) n += block_kind(l) == BlockKind::kSsm ? 1 : 0;
  return n;
}

void GptConfig::validate() const {
  auto positive = [](const char* name, int value) { check_dimension(name, value, kMaxDimension); };
  positive("NUM_LAYERS", num_layers);
  positive("MODEL_DIMS", model_dims);
  positive("HIDDEN_DIMS", hidden_dims);
  positive("NUM_HEADS", num_heads);
  positive("DIMS_PER_HEAD", dims_per_head);
  positive("MAX_SEQ_LEN", max_seq_len);
  positive("VOCAB_SIZE", vocab_size);
  if (static_cast<std::int64_t>(num_heads) * dims_per_head > kMaxDimension) {
    throw ConfigError(fmt::format("NUM_HEADS={} x DIMS_PER_HEAD={}: the attention width must be at most {}", num_heads,
                                  dims_per_head, kMaxDimension));
  }
  if (padded_vocab_size < 0 || padded_vocab_size > kMaxDimension) {
    throw ConfigError(fmt::format("padded vocabulary {}: must be in [0, {}]", padded_vocab_size, kMaxDimension));
  }
  if (padded_vocab_size != 0 && padded_vocab_size < vocab_size) {
    throw ConfigError(fmt::format("padded vocabulary {} is smaller than VOCAB_SIZE={}", padded_vocab_size, vocab_size));
  }
  if (!(init_std > 0.0f) || !std::isfinite(init_std)) throw ConfigError(fmt::format("INIT_STD={}: must be positive", init_std));
  if (!block_kinds.empty() && num_layers % static_cast<int>(block_kinds.size()) != 0) {
    throw ConfigError(fmt::format("BLOCK_KINDS={}: its {} kinds repeat over the layers, so their number must divide "
                                  "NUM_LAYERS={}", block_kinds_text(block_kinds), block_kinds.size(), num_layers));
  }
  if (ssm_blocks() > 0) ssm.validate(max_seq_len);
}

std::int64_t GptConfig::matmul_parameters() const {
  const std::int64_t C = model_dims, D = attention_dims(), H = hidden_dims;
  const std::int64_t attention_blocks = num_layers - ssm_blocks();
  return attention_blocks * (C * 3 * D + D * C) + static_cast<std::int64_t>(num_layers) * 2 * C * H +
         static_cast<std::int64_t>(padded_vocab()) * C;
}

double GptConfig::flops_per_token(int seq_len) const {
  return 6.0 * static_cast<double>(matmul_parameters()) +
         12.0 * (num_layers - ssm_blocks()) * static_cast<double>(seq_len) * model_dims;
}

std::string GptConfig::describe() const {
  std::string blocks;
  if (ssm_blocks() > 0) {
    blocks = fmt::format(" blocks={} ssm(N={} dt={} {})", block_kinds_text(block_kinds), ssm.state_size, ssm.step_size,
                         ssm.hippo_type);
  }
  return fmt::format("L={} C={} H={} NH={} hs={} T={} V={} (Vp={}){}", num_layers, model_dims, hidden_dims, num_heads,
                     dims_per_head, max_seq_len, vocab_size, padded_vocab(), blocks);
}

std::vector<TensorDef> tensor_defs_of(const GptConfig& c) {
  c.validate();
  const std::int64_t C = c.model_dims, D = c.attention_dims(), H = c.hidden_dims, Vp = c.padded_vocab();
  using Init = TensorSpec::Init;
  std::vector<TensorDef> defs;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, bool decay, Init init, int block) {
    defs.push_back(TensorDef{std::move(name), std::move(shape), decay, init, block});
  };
  const std::int64_t N = c.ssm.state_size;
  const float ssm_c_std = static_cast<float>(std::sqrt(0.5));  // praxis: WeightInit.Gaussian(0.5 ** 0.5)
  auto is_ssm = [&](int l) { return c.block_kind(l) == BlockKind::kSsm; };
  auto layer = [](int l, std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
  // Matrices (weight-decayed), then vectors.
  add(std::string(names::kTokenEmbedding), {Vp, C}, true, Init::kGaussian, -1);
  add(std::string(names::kPositionEmbedding), {c.max_seq_len, C}, true, Init::kGaussian, -1);
  for (int l = 0; l < c.num_layers; ++l) {
    if (!is_ssm(l)) {
      add(layer(l, names::kQkvWeight), {3 * D, C}, true, Init::kGaussian, l);
      add(layer(l, names::kAttnProjWeight), {C, D}, true, Init::kGaussian, l);
    }
    add(layer(l, names::kFcWeight), {H, C}, true, Init::kGaussian, l);
    add(layer(l, names::kFcProjWeight), {C, H}, true, Init::kGaussian, l);
  }
  for (int l = 0; l < c.num_layers; ++l) {
    add(layer(l, names::kLn1Scale), {C}, false, Init::kOne, l);
    add(layer(l, names::kLn1Bias), {C}, false, Init::kZero, l);
    if (is_ssm(l)) {
      add(layer(l, names::kSsmCRe), {N, C}, false, Init::kGaussian, l);
      defs.back().init_std = ssm_c_std;
      add(layer(l, names::kSsmCIm), {N, C}, false, Init::kGaussian, l);
      defs.back().init_std = ssm_c_std;
      add(layer(l, names::kSsmD), {C}, false, Init::kOne, l);
    } else {
      add(layer(l, names::kQkvBias), {3 * D}, false, Init::kZero, l);
      add(layer(l, names::kAttnProjBias), {C}, false, Init::kZero, l);
    }
    add(layer(l, names::kLn2Scale), {C}, false, Init::kOne, l);
    add(layer(l, names::kLn2Bias), {C}, false, Init::kZero, l);
    add(layer(l, names::kFcBias), {H}, false, Init::kZero, l);
    add(layer(l, names::kFcProjBias), {C}, false, Init::kZero, l);
  }
  add(std::string(names::kFinalNormScale), {C}, false, Init::kOne, -1);
  add(std::string(names::kFinalNormBias), {C}, false, Init::kZero, -1);
  return defs;
}

}  // namespace paxocl::models
