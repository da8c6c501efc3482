#include "models/hf_llama_io.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/bounded_json.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "common/float16.h"
#include "common/float16_arrays.h"
#include "common/safetensors.h"
#include "models/parameter_layout.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace {

namespace fs = std::filesystem;
namespace names = tensor_names::llama;

constexpr const char* kConfigFile = "config.json";
constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

[[noreturn]] void fail(const fs::path& file, std::string_view what) { throw FileError(file, what); }

// Where a checkpoint's config.json and tensors are: a directory, or a file with config.json beside it.
fs::path config_path(const fs::path& path) {
  return fs::is_directory(path) ? path / kConfigFile : path.parent_path() / kConfigFile;
}

nlohmann::json read_json(const fs::path& file) {
  try {
    return read_json_file_bounded(file);
  } catch (const std::invalid_argument& e) {
    fail(file, e.what());
  }
}

// One integer field of config.json in [1, kMaxDimension]; `fallback` when absent (none: required).
int config_int(const fs::path& file, const nlohmann::json& j, const char* key, std::optional<int> fallback = {}) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    fail(file, fmt::format("missing \"{}\"; expected a Hugging Face LLaMA config", key));
  }
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > LlamaConfig::kMaxDimension) {
    fail(file, fmt::format("\"{}\" is {}; expected an integer in [1, {}]", key, v.dump(), LlamaConfig::kMaxDimension));
  }
  return static_cast<int>(v.get<long long>());
}

double config_number(const fs::path& file, const nlohmann::json& j, const char* key, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number()) fail(file, fmt::format("\"{}\" is {}; expected a number", key, j[key].dump()));
  return j[key].get<double>();
}

bool config_flag(const fs::path& file, const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return false;
  if (!j[key].is_boolean()) fail(file, fmt::format("\"{}\" is {}; expected true or false", key, j[key].dump()));
  return j[key].get<bool>();
}

struct HfConfig {
  LlamaConfig llama;
  bool tied = false;
};

HfConfig read_config(const fs::path& file) {
  const nlohmann::json j = read_json(file);
  if (!j.is_object()) fail(file, "expected a JSON object");
  // Compared as JSON: j.value("model_type", std::string()) throws nlohmann's type_error for a number.
  if (!j.contains("model_type") || j["model_type"] != "llama") {
    fail(file, fmt::format("model_type is {}; only Hugging Face LLaMA checkpoints (\"llama\") load here",
                           j.contains("model_type") ? j["model_type"].dump() : "missing"));
  }
  // transformers 4 writes rope_theta and rope_scaling; 5 writes rope_parameters {rope_theta, rope_type}.
  double rope_theta = config_number(file, j, "rope_theta", 10000.0);
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const nlohmann::json& r = j[key];
    // rope_type (transformers 5), else type (4), else default; compared as JSON (any type is refused).
    auto type = [](const nlohmann::json& o) -> nlohmann::json {
      for (const char* k : {"rope_type", "type"}) {
        if (o.contains(k) && !o[k].is_null()) return o[k];
      }
      return "default";
    };
    if (!r.is_object() || type(r) != "default") {
      fail(file, fmt::format("\"{}\" is {}: only plain rotary embeddings (rope_type default) are supported", key, r.dump()));
    }
    rope_theta = config_number(file, r, "rope_theta", rope_theta);
  }
  // The MLP's gate activation (absent: transformers' default, silu).
  if (j.contains("hidden_act") && !j["hidden_act"].is_null() && j["hidden_act"] != "silu") {
    fail(file, fmt::format("\"hidden_act\" is {}; pax-ocl's LLaMA gates its MLP with silu (SwiGLU)", j["hidden_act"].dump()));
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (config_flag(file, j, bias)) fail(file, fmt::format("\"{}\" is true; pax-ocl's LLaMA has no biases", bias));
  }
  HfConfig c;
  LlamaConfig& l = c.llama;
  l.model_dims = config_int(file, j, "hidden_size");
  l.hidden_dims = config_int(file, j, "intermediate_size");
  l.num_layers = config_int(file, j, "num_hidden_layers");
  l.num_heads = config_int(file, j, "num_attention_heads");
  l.num_kv_heads = config_int(file, j, "num_key_value_heads", l.num_heads);
  l.dims_per_head = config_int(file, j, "head_dim", l.model_dims / l.num_heads);
  l.max_seq_len = config_int(file, j, "max_position_embeddings");
  l.vocab_size = config_int(file, j, "vocab_size");
  l.rope_base = static_cast<float>(rope_theta);
  l.norm_epsilon = static_cast<float>(config_number(file, j, "rms_norm_eps", 1e-6));
  l.init_std = static_cast<float>(config_number(file, j, "initializer_range", 0.02));
  c.tied = config_flag(file, j, "tie_word_embeddings");
  try {
    l.validate();
  } catch (const ConfigError& e) {
    fail(file, fmt::format("unusable model shape: {}", e.what()));
  }
  return c;
}

// The tensors of a checkpoint across its files: name -> (reader, entry).
class TensorFiles {
 public:
  explicit TensorFiles(const fs::path& path) {
    if (!fs::is_directory(path)) {
      add_file(path);
      return;
    }
    if (fs::exists(path / kWeightsFile)) {
      add_file(path / kWeightsFile);
      return;
    }
    const fs::path index = path / kIndexFile;
    if (!fs::exists(index)) fail(path, fmt::format("neither {} nor {} is here", kWeightsFile, kIndexFile));
    const nlohmann::json j = read_json(index);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) fail(index, "no \"weight_map\" object");
    std::map<std::string, std::size_t> opened;  // shard file -> readers_ index
    for (const auto& [tensor, shard] : j["weight_map"].items()) {
      if (!shard.is_string()) fail(index, fmt::format("the shard of {} is {}, expected a file name", tensor, shard.dump()));
      const std::string file = shard.get<std::string>();
      if (!is_plain_file_name(file)) {
        fail(index, fmt::format("shard {} of {} is not a file name in the checkpoint's directory",
                                nlohmann::json(file).dump(), tensor));
      }
      if (!opened.contains(file)) opened[file] = add_file(path / file);
      if (!where_.contains(tensor)) fail(index, fmt::format("{} is mapped to {}, which does not hold it", tensor, file));
    }
  }

  // The tensor's entry, checked: present, F32, BF16 or F16, of this shape.
  std::pair<const SafetensorsReader*, const SafetensorsReader::Entry*> need(const std::string& name,
                                                                              const TensorShape& shape) const {
    const auto it = where_.find(name);
    if (it == where_.end()) fail(first_file_, fmt::format("missing tensor {}; expected a Hugging Face LLaMA model", name));
    const auto& [reader, entry] = it->second;
    if (entry->dtype != "F32" && entry->dtype != "BF16" && entry->dtype != "F16") {
      fail(files_[reader], fmt::format("tensor {} has dtype {}; F32, BF16 and F16 load (convert with "
                                       "model.float().save_pretrained(...))", name, entry->dtype));
    }
    if (entry->shape != shape) {
      fail(files_[reader], fmt::format("tensor {} has shape [{}], expected [{}] from config.json", name,
                                       fmt::join(entry->shape, ", "), fmt::join(shape, ", ")));
    }
    return {readers_[reader].get(), entry};
  }
  bool has(const std::string& name) const { return where_.contains(name); }

 private:
  std::size_t add_file(const fs::path& file) {
    readers_.push_back(std::make_unique<SafetensorsReader>(file));
    files_.push_back(file);
    if (first_file_.empty()) first_file_ = file;
    for (const auto& [name, entry] : readers_.back()->entries()) {
      // Two shards holding one tensor: which one the index means cannot be told from the files.
      if (const auto it = where_.find(name); it != where_.end()) {
        fail(file, fmt::format("holds tensor {}, which {} holds too; a checkpoint holds each tensor once", name,
                               files_[it->second.first].filename().string()));
      }
      where_[name] = {readers_.size() - 1, &entry};
    }
    return readers_.size() - 1;
  }

  std::vector<std::unique_ptr<SafetensorsReader>> readers_;
  std::vector<fs::path> files_;
  fs::path first_file_;
  std::map<std::string, std::pair<std::size_t, const SafetensorsReader::Entry*>> where_;
};

// One Hugging Face tensor: which rows of which of our tensors it fills.
struct HfTensor {
  std::string name;
  std::string ours;
  std::int64_t first_row = 0, rows = 0, cols = 0;
};

// A tensor's values as float32 into dst: 16-bit files (Hugging Face's usual bfloat16 or float16)
// widen exactly.
void read_as_f32(const SafetensorsReader& reader, const SafetensorsReader::Entry& entry, float* dst) {
  if (entry.dtype == "F32") {
    reader.read(entry, dst);
    return;
  }
  std::vector<std::uint16_t> bits((entry.end - entry.begin) / sizeof(std::uint16_t));
  reader.read(entry, bits.data());
  if (entry.dtype == "BF16") {
    for (std::size_t i = 0; i < bits.size(); ++i) dst[i] = bf16_to_float(bits[i]);
  } else {
    halves_to_floats(bits.data(), bits.size(), dst);
  }
}

std::string hf_layer(int l, std::string_view suffix) { return fmt::format("model.layers.{}.{}", l, suffix); }

// In the order save_hf_llama writes them (transformers' named_parameters order).
std::vector<HfTensor> hf_tensors(const LlamaConfig& c) {
  const std::int64_t C = c.model_dims, F = c.hidden_dims, Q = c.attention_dims(), K = c.kv_dims(), V = c.vocab_size;
  std::vector<HfTensor> out;
  out.push_back({"model.embed_tokens.weight", std::string(names::kTokenEmbedding), 0, V, C});
  for (int l = 0; l < c.num_layers; ++l) {
    auto ours = [l](std::string_view s) { return ParameterLayout::layer_name(l, s); };
    out.push_back({hf_layer(l, "self_attn.q_proj.weight"), ours(names::kQkvWeight), 0, Q, C});
    out.push_back({hf_layer(l, "self_attn.k_proj.weight"), ours(names::kQkvWeight), Q, K, C});
    out.push_back({hf_layer(l, "self_attn.v_proj.weight"), ours(names::kQkvWeight), Q + K, K, C});
    out.push_back({hf_layer(l, "self_attn.o_proj.weight"), ours(names::kAttnProjWeight), 0, C, Q});
    out.push_back({hf_layer(l, "mlp.gate_proj.weight"), ours(names::kGateUpWeight), 0, F, C});
    out.push_back({hf_layer(l, "mlp.up_proj.weight"), ours(names::kGateUpWeight), F, F, C});
    out.push_back({hf_layer(l, "mlp.down_proj.weight"), ours(names::kDownWeight), 0, C, F});
    out.push_back({hf_layer(l, "input_layernorm.weight"), ours(names::kAttnNormScale), 0, 1, C});
    out.push_back({hf_layer(l, "post_attention_layernorm.weight"), ours(names::kMlpNormScale), 0, 1, C});
  }
  out.push_back({"model.norm.weight", std::string(names::kFinalNormScale), 0, 1, C});
  out.push_back({"lm_head.weight", std::string(names::kLmHead), 0, V, C});
  return out;
}

// Norm scales are vectors in HF's files; everything else is (rows, cols).
TensorShape hf_shape(const HfTensor& t) { return t.rows == 1 && t.name.ends_with("norm.weight") ? TensorShape{t.cols} : TensorShape{t.rows, t.cols}; }

}  // namespace

bool is_hf_llama_checkpoint(const fs::path& path) {
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  if (!dir && path.extension() != ".safetensors") return false;
  const fs::path config = config_path(path);
  if (!fs::exists(config, ec)) return false;
  try {
    const nlohmann::json j = read_json_file_bounded(config);
    return j.is_object() && j.value("model_type", std::string()) == "llama";
  } catch (const std::exception&) {
    return dir;  // a directory meant as a checkpoint: loading it reports what is wrong
  }
}

HostWeights load_hf_llama(const fs::path& path, std::size_t alignment) {
  const HfConfig config = read_config(config_path(path));
  const LlamaConfig& c = config.llama;
  const TensorFiles files(path);
  const std::vector<HfTensor> tensors = hf_tensors(c);
  // Every tensor present with its shape before anything is sized by the config.
  for (const HfTensor& t : tensors) {
    if (t.name == "lm_head.weight" && config.tied && !files.has(t.name)) continue;
    files.need(t.name, hf_shape(t));
  }
  HostWeights w{ModelConfig(c), 0, {}};
  const ParameterLayout layout(w.config, alignment);
  w.alignment = layout.alignment();
  w.data.assign(layout.total(), 0.0f);
  for (const HfTensor& t : tensors) {
    const bool from_embedding = t.name == "lm_head.weight" && config.tied && !files.has(t.name);
    const auto [reader, entry] = files.need(from_embedding ? tensors.front().name : t.name, hf_shape(t));
    read_as_f32(*reader, *entry, w.data.data() + layout.at(t.ours).offset + static_cast<std::size_t>(t.first_row * t.cols));
  }
  return w;
}

void save_hf_llama(const fs::path& path, const HostWeights& w) {
  const LlamaConfig& c = w.config.llama();
  c.validate();
  const ParameterLayout layout(w.config, w.alignment);
  if (w.data.size() != layout.total()) {
    throw std::invalid_argument(fmt::format("HostWeights holds {} floats, its layout needs {}", w.data.size(), layout.total()));
  }
  const bool as_file = path.extension() == ".safetensors";
  const fs::path dir = as_file ? (path.has_parent_path() ? path.parent_path() : fs::path(".")) : path;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw DataError(fmt::format("cannot create directory {}: {}", dir.string(), ec.message()));
  const std::vector<HfTensor> tensors = hf_tensors(c);
  std::vector<std::pair<std::string, TensorShape>> shapes;
  for (const HfTensor& t : tensors) shapes.emplace_back(t.name, hf_shape(t));
  SafetensorsWriter out(as_file ? path : dir / kWeightsFile, shapes, {{"format", "pt"}});
  for (const HfTensor& t : tensors) {
    const float* src = w.data.data() + layout.at(t.ours).offset + static_cast<std::size_t>(t.first_row * t.cols);
    out.add(std::span<const float>(src, static_cast<std::size_t>(t.rows * t.cols)));
  }
  out.commit();
  // A float as the shortest decimal that reads back as it: 1e-05, not the widened 9.99999974737875e-06.
  auto shortest = [](float f) { return std::stod(fmt::format("{}", f)); };
  const nlohmann::ordered_json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", c.model_dims},
      {"intermediate_size", c.hidden_dims},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.dims_per_head},
      {"max_position_embeddings", c.max_seq_len},
      {"vocab_size", c.vocab_size},
      {"rope_theta", shortest(c.rope_base)},
      {"rms_norm_eps", shortest(c.norm_epsilon)},
      {"initializer_range", shortest(c.init_std)},
      {"hidden_act", "silu"},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"tie_word_embeddings", false},
      {"torch_dtype", "float32"},
  };
  write_file_atomically(dir / kConfigFile, config.dump(2) + "\n");
}

}  // namespace paxocl::models
