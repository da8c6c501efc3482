#include "models/gpt_file_settings.h"

#include <cmath>
#include <string>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "common/bounded_json.h"
#include "common/errors.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace {

namespace fs = std::filesystem;
namespace hf = tensor_names::hf;

constexpr std::string_view kPrefix = "pax_ocl.";
constexpr int kMaxPaddingRows = 1 << 16;
std::string key(std::string_view setting) { return std::string(kPrefix) + std::string(setting); }

[[noreturn]] void fail(const fs::path& file, std::string_view what) { throw FileError(file, what); }

// A positive integer recorded as a string in __metadata__.
int meta_int(const fs::path& file, const nlohmann::json& metadata, std::string_view setting) {
  const std::string k = key(setting);
  if (!metadata.contains(k) || !metadata[k].is_string()) {
    fail(file, fmt::format("__metadata__ misses \"{}\"; export the model again with this pax-ocl", k));
  }
  const std::string text = metadata[k].get<std::string>();
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1 || v > GptConfig::kMaxDimension) {
    fail(file, fmt::format("__metadata__ \"{}\" is \"{}\"; expected an integer in [1, {}]", k, text, GptConfig::kMaxDimension));
  }
  return static_cast<int>(v);
}

// What a GPT-2 config.json says (heads) once its other fields are checked against the tensors (c)
// and against what pax-ocl's GPT computes. nullopt when there is no config.json beside the file.
std::optional<int> hf_gpt2_heads(const fs::path& file, const GptConfig& c) {
  const fs::path config = file.parent_path() / "config.json";
  std::error_code ec;
  if (!fs::exists(config, ec)) return std::nullopt;
  nlohmann::json j;
  try {
    j = read_json_file_bounded(config);
  } catch (const std::invalid_argument& e) {
    fail(config, e.what());
  }
  // Compared as JSON: j.value(key, std::string()) throws nlohmann's type_error for a number.
  if (!j.is_object() || !j.contains("model_type") || j["model_type"] != "gpt2") {
    fail(config, fmt::format("model_type is {}; beside a GPT-2 .safetensors pax-ocl expects \"gpt2\" (or move the file "
                             "away from this config.json)",
                             j.is_object() && j.contains("model_type") ? j["model_type"].dump() : "missing"));
  }
  auto integer = [&](const char* k, std::optional<int> expected) -> std::optional<int> {
    if (!j.contains(k) || j[k].is_null()) return std::nullopt;
    if (!j[k].is_number_integer() || j[k].get<long long>() < 1 || j[k].get<long long>() > GptConfig::kMaxDimension) {
      fail(config, fmt::format("\"{}\" is {}; expected an integer in [1, {}]", k, j[k].dump(), GptConfig::kMaxDimension));
    }
    const int v = static_cast<int>(j[k].get<long long>());
    if (expected && v != *expected) {
      fail(config, fmt::format("\"{}\" is {} but the tensors of {} give {}", k, v, file.string(), *expected));
    }
    return v;
  };
  integer("n_embd", c.model_dims);
  integer("n_layer", c.num_layers);
  integer("n_positions", c.max_seq_len);
  integer("vocab_size", c.vocab_size);
  integer("n_inner", c.hidden_dims);  // null: 4 n_embd, which the tensors then show
  const std::optional<int> heads = integer("n_head", std::nullopt);
  if (!heads) fail(config, "misses \"n_head\"; expected a Hugging Face GPT-2 config");
  if (j.contains("layer_norm_epsilon")) {
    const nlohmann::json& eps = j["layer_norm_epsilon"];
    if (!eps.is_number() || std::abs(eps.get<double>() - GptConfig::kLayerNormEpsilon) > 1e-12) {
      fail(config, fmt::format("\"layer_norm_epsilon\" is {}; pax-ocl's GPT uses {}", eps.dump(), GptConfig::kLayerNormEpsilon));
    }
  }
  // transformers' gelu_new and gelu_pytorch_tanh are the tanh approximation pax-ocl computes.
  if (const nlohmann::json act = j.contains("activation_function") && !j["activation_function"].is_null()
                                     ? j["activation_function"]
                                     : nlohmann::json("gelu_new");
      act != "gelu_new" && act != "gelu_pytorch_tanh") {
    fail(config, fmt::format("\"activation_function\" is {}; pax-ocl's GPT computes gelu_new (tanh GELU)", act.dump()));
  }
  // GPT2Config's switches of the attention arithmetic, with the value pax-ocl computes (absent or
  // null: transformers' default, which is it). reorder_and_upcast_attn is not among them: it only
  // computes the same scores in float32, as pax-ocl does anyway.
  for (const auto& [k, computed, what] : {
           std::tuple<const char*, bool, const char*>{"scale_attn_weights", true, "scales attention scores by 1/sqrt(head dims)"},
           {"scale_attn_by_inverse_layer_idx", false, "does not scale attention scores by 1/(layer index + 1)"},
           {"add_cross_attention", false, "has no cross-attention"}}) {
    if (!j.contains(k) || j[k].is_null()) continue;
    if (!j[k].is_boolean()) fail(config, fmt::format("\"{}\" is {}; expected true or false", k, j[k].dump()));
    if (j[k].get<bool>() != computed) {
      fail(config, fmt::format("\"{}\" is {}; pax-ocl's GPT {}", k, j[k].dump(), what));
    }
  }
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"] != true) {
    fail(config, "\"tie_word_embeddings\" is not true; pax-ocl's GPT ties its LM head to the token embedding");
  }
  return heads;
}

}  // namespace

void require_heads_agree(const fs::path& file, std::optional<int> given, int recorded, std::string_view recorded_in) {
  if (!given || *given == recorded) return;
  throw ConfigError(fmt::format("NUM_HEADS={} contradicts {}, which records {} heads ({}); leave NUM_HEADS out: the "
                                "file's settings are used",
                                *given, file.string(), recorded, recorded_in));
}

nlohmann::ordered_json gpt_settings_metadata(const GptConfig& c) {
  nlohmann::ordered_json m = {{"format", "pt"}};
  auto put = [&](std::string_view k, const std::string& v) { m[std::string(k)] = v; };
  put(key("architecture"), "gpt");
  put(key("num_layers"), std::to_string(c.num_layers));
  put(key("model_dims"), std::to_string(c.model_dims));
  put(key("hidden_dims"), std::to_string(c.hidden_dims));
  put(key("num_heads"), std::to_string(c.num_heads));
  put(key("dims_per_head"), std::to_string(c.dims_per_head));
  put(key("max_seq_len"), std::to_string(c.max_seq_len));
  put(key("vocab_size"), std::to_string(c.vocab_size));
  put(key("padded_vocab_size"), std::to_string(c.padded_vocab()));
  put(key("layer_norm_epsilon"), fmt::format("{}", GptConfig::kLayerNormEpsilon));
  put(key("tied_lm_head"), "true");
  put(hf::kMetaBlockKinds, block_kinds_text(c.block_kinds.empty() ? std::vector{BlockKind::kAttention} : c.block_kinds));
  if (c.ssm_blocks() > 0) {
    put(key("ssm_nheads"), std::to_string(c.ssm.state_size));
    put(hf::kMetaSsmStepSize, fmt::format("{}", c.ssm.step_size));
    put(hf::kMetaSsmHippoType, c.ssm.hippo_type);
    put(hf::kMetaSsmLMax, std::to_string(c.ssm.l_max));
  }
  return m;
}

void complete_gpt_settings(const fs::path& file, const nlohmann::json& metadata, std::optional<int> num_heads,
                           GptConfig& c) {
  const bool pax_record = metadata.is_object() && metadata.contains(key("architecture"));
  std::optional<int> heads;
  std::string recorded_in;
  if (pax_record) {
    if (metadata[key("architecture")] != "gpt") {
      fail(file, fmt::format("__metadata__ \"{}\" is {}; expected \"gpt\"", key("architecture"), metadata[key("architecture")].dump()));
    }
    heads = meta_int(file, metadata, "num_heads");
    c.dims_per_head = meta_int(file, metadata, "dims_per_head");
    c.padded_vocab_size = meta_int(file, metadata, "padded_vocab_size");
    // Padding rows are not stored, so the file's size cannot bound them: a rounding never adds 2^16.
    if (c.padded_vocab_size < c.vocab_size || c.padded_vocab_size - c.vocab_size > kMaxPaddingRows) {
      fail(file, fmt::format("__metadata__ \"{}\" is {}; expected VOCAB_SIZE={} rounded up by at most {} rows",
                             key("padded_vocab_size"), c.padded_vocab_size, c.vocab_size, kMaxPaddingRows));
    }
    recorded_in = "its __metadata__";
  } else if ((heads = hf_gpt2_heads(file, c))) {
    recorded_in = (file.parent_path() / "config.json").string();
  }
  if (heads) require_heads_agree(file, num_heads, *heads, recorded_in);
  if (!heads && !num_heads) {
    throw ConfigError(fmt::format("{} does not record its head count (no pax-ocl __metadata__, no Hugging Face "
                                  "config.json beside it): give it with --fdl.NUM_HEADS=N (pax-ocl sample: --num_heads=N)",
                                  file.string()));
  }
  const int h = heads.value_or(num_heads.value_or(0));
  if (h < 1 || c.model_dims % h != 0) {
    throw ConfigError(fmt::format("NUM_HEADS={} must divide MODEL_DIMS={} of {}", h, c.model_dims, file.string()));
  }
  c.num_heads = h;
  if (!pax_record) {
    c.dims_per_head = c.model_dims / h;
    return;
  }
  // The format holds NUM_HEADS * DIMS_PER_HEAD = MODEL_DIMS only (save_safetensors refuses others);
  // attention's tensors check that, but in a file of SSM blocks alone no tensor does.
  if (c.attention_dims() != c.model_dims) {
    fail(file, fmt::format("__metadata__ \"{}\" {} x \"{}\" {} is not MODEL_DIMS={}, which a GPT safetensors file "
                           "needs", key("num_heads"), h, key("dims_per_head"), c.dims_per_head, c.model_dims));
  }
  // Every setting the file records agrees with its tensors (and every one this pax-ocl writes is there).
  const nlohmann::ordered_json expected = gpt_settings_metadata(c);
  for (const auto& [k, v] : expected.items()) {
    if (k == "format") continue;
    if (!metadata.contains(k)) fail(file, fmt::format("__metadata__ misses \"{}\"; export the model again with this pax-ocl", k));
    if (metadata[k] != v) {
      fail(file, fmt::format("__metadata__ \"{}\" is {} but the tensors give {}", k, metadata[k].dump(), v.dump()));
    }
  }
  for (const auto& [k, v] : metadata.items()) {
    if (k.starts_with(kPrefix) && !expected.contains(k)) {
      fail(file, fmt::format("__metadata__ has \"{}\", a setting this pax-ocl does not know (a newer pax-ocl's file?)", k));
    }
  }
}

}  // namespace paxocl::models
