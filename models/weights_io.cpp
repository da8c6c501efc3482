#include "models/weights_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/in_file.h"
#include "common/regular_file.h"
#include "common/safetensors.h"
#include "common/saturating.h"
#include "models/gpt_file_settings.h"
#include "models/hf_llama_io.h"
#include "models/parameter_layout.h"
#include "models/tensor_names.h"

namespace paxocl::models {

// Both formats are little-endian fp32, read and written as raw host memory.
static_assert(std::endian::native == std::endian::little, "weight files assume a little-endian host");
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559);

namespace {

namespace fs = std::filesystem;
namespace names = tensor_names;
using Shape = TensorShape;
using StEntry = SafetensorsReader::Entry;

[[noreturn]] void fail(const fs::path& file, std::string_view what) { throw FileError(file, what); }

void require_data_size(const HostWeights& w, const ParameterLayout& layout) {
  if (w.data.size() != layout.total()) {
    throw std::invalid_argument(fmt::format("HostWeights holds {} floats, its layout needs {}", w.data.size(), layout.total()));
  }
}

// ---- llm.c ----------------------------------------------------------------------------------

constexpr std::int32_t kLlmcMagic = 20240326;
constexpr std::int32_t kLlmcVersion = 3;  // fp32; llm.c writes bf16 as version 5
using LlmcHeader = std::array<std::int32_t, 256>;

// The layout's tensors in llm.c file order: each kind stacked over layers, so every entry is one
// contiguous run of the file.
std::vector<const TensorSpec*> llmc_order(const ParameterLayout& layout, int num_layers) {
  struct Kind {
    std::string_view name;
    bool per_layer;
  };
  static constexpr std::array<Kind, 16> kOrder{{{names::kTokenEmbedding, false},  {names::kPositionEmbedding, false},
                                                {names::kLn1Scale, true},         {names::kLn1Bias, true},
                                                {names::kQkvWeight, true},        {names::kQkvBias, true},
                                                {names::kAttnProjWeight, true},   {names::kAttnProjBias, true},
                                                {names::kLn2Scale, true},         {names::kLn2Bias, true},
                                                {names::kFcWeight, true},         {names::kFcBias, true},
                                                {names::kFcProjWeight, true},     {names::kFcProjBias, true},
                                                {names::kFinalNormScale, false},  {names::kFinalNormBias, false}}};
  std::vector<const TensorSpec*> out;
  for (const Kind& k : kOrder) {
    if (!k.per_layer) {
      out.push_back(&layout.at(k.name));
      continue;
    }
    for (int l = 0; l < num_layers; ++l) out.push_back(&layout.at(ParameterLayout::layer_name(l, k.name)));
  }
  return out;
}

// A config read from a file that GptConfig rejects (a dimension too large) is the file's fault.
void validate_from_file(const fs::path& file, const GptConfig& c) {
  try {
    c.validate();
  } catch (const ConfigError& e) {
    fail(file, fmt::format("unusable model shape: {}", e.what()));
  }
}

GptConfig llmc_config(const fs::path& file, const LlmcHeader& h) {
  if (h[0] != kLlmcMagic) fail(file, fmt::format("not an llm.c checkpoint: magic {}, expected {}", h[0], kLlmcMagic));
  if (h[1] != kLlmcVersion) {
    fail(file, fmt::format("unsupported llm.c checkpoint version {}, expected {} (fp32){}", h[1], kLlmcVersion,
                           h[1] == 5 ? "; version 5 is bf16: re-export the model in float32" : ""));
  }
  const std::array<std::pair<const char*, std::int32_t>, 6> fields{
      {{"maxT", h[2]}, {"V", h[3]}, {"L", h[4]}, {"NH", h[5]}, {"C", h[6]}, {"Vp", h[7]}}};
  for (const auto& [name, value] : fields) {
    if (value < 1) fail(file, fmt::format("bad llm.c header: {}={}, must be at least 1", name, value));
  }
  const int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
  if (C > std::numeric_limits<int>::max() / 4) fail(file, fmt::format("bad llm.c header: C={} is too large", C));
  if (C % NH != 0) fail(file, fmt::format("inconsistent llm.c header: C={} is not a multiple of NH={}", C, NH));
  if (Vp < V) fail(file, fmt::format("inconsistent llm.c header: Vp={} is smaller than V={}", Vp, V));
  GptConfig c;
  c.num_layers = L;
  c.model_dims = C;
  c.hidden_dims = 4 * C;
  c.num_heads = NH;
  c.dims_per_head = C / NH;
  c.max_seq_len = maxT;
  c.vocab_size = V;
  c.padded_vocab_size = Vp;
  validate_from_file(file, c);
  return c;
}

// Floats of an llm.c file of config c, from the header alone (saturating: it only has to fail a size
// check): wte, wpe, per layer 12 C^2 + 13 C, lnf.
std::uint64_t llmc_floats(const GptConfig& c) {
  const std::uint64_t C = static_cast<std::uint64_t>(c.model_dims);
  const std::uint64_t per_layer = add_sat(mul_sat(12 * C, C), 13 * C);
  std::uint64_t n = mul_sat(static_cast<std::uint64_t>(c.padded_vocab()) + static_cast<std::uint64_t>(c.max_seq_len), C);
  n = add_sat(n, mul_sat(static_cast<std::uint64_t>(c.num_layers), per_layer));
  return add_sat(n, 2 * C);
}

// ---- safetensors ----------------------------------------------------------------------------

const std::string kHfPrefix(names::hf::kPrefix);  // GPT2LMHeadModel; GPT2Model files have none

// "h.<l>.<suffix>": a block tensor's Hugging Face name, without the prefix.
std::string hf_block_name(int l, std::string_view suffix) { return fmt::format("{}{}.{}", names::hf::kBlockPrefix, l, suffix); }

// One tensor of a Hugging Face GPT-2 file and where it lives in our layout.
struct HfTensor {
  std::string name;  // without the "transformer." prefix
  const TensorSpec* ours;
  Shape shape;   // as stored in the file
  bool conv1d;   // stored (in, out), the transpose of ours
};

// The order save_safetensors writes: wte, wpe, layer by layer, ln_f.
std::vector<HfTensor> hf_tensors(const ParameterLayout& layout, const GptConfig& c) {
  std::vector<HfTensor> out;
  auto add = [&](std::string name, std::string_view ours, bool conv1d) {
    const TensorSpec& t = layout.at(ours);
    Shape shape = t.shape;
    if (conv1d) std::swap(shape[0], shape[1]);
    out.push_back({std::move(name), &t, std::move(shape), conv1d});
  };
  add(std::string(names::hf::kTokenEmbedding), names::kTokenEmbedding, false);
  out.back().shape[0] = c.vocab_size;  // the padding rows are not stored
  add(std::string(names::hf::kPositionEmbedding), names::kPositionEmbedding, false);
  for (int l = 0; l < c.num_layers; ++l) {
    const bool ssm = c.block_kind(l) == BlockKind::kSsm;
    for (const names::hf::BlockTensor& t : names::hf::kBlockTensors) {
      if (ssm && t.ours.starts_with("attn.")) {  // the SSM's variables where attention's would be
        if (t.ours != names::kQkvWeight) continue;
        for (const names::hf::BlockTensor& v : names::hf::kSsmTensors) {
          add(hf_block_name(l, v.hf), ParameterLayout::layer_name(l, v.ours), false);
        }
        continue;
      }
      add(hf_block_name(l, t.hf), ParameterLayout::layer_name(l, t.ours), t.conv1d);
    }
  }
  add(std::string(names::hf::kFinalNormScale), names::kFinalNormScale, false);
  add(std::string(names::hf::kFinalNormBias), names::kFinalNormBias, false);
  return out;
}

// Floats of the tensors a Hugging Face GPT-2 file of config c stores (saturating): wte's V rows,
// wpe, per layer 2 LayerNorms, c_attn, c_proj, c_fc, mlp c_proj with biases, then ln_f.
// An SSM block stores 2 N C + C in place of attention's 4 C^2 + 4 C.
std::uint64_t hf_floats(const GptConfig& c) {
  const auto C = static_cast<std::uint64_t>(c.model_dims), H = static_cast<std::uint64_t>(c.hidden_dims);
  const auto N = static_cast<std::uint64_t>(c.ssm.state_size);
  const std::uint64_t rest = add_sat(mul_sat(2 * C, H), add_sat(5 * C, H));
  const std::uint64_t attention = add_sat(mul_sat(4 * C, C), 4 * C), ssm = add_sat(mul_sat(2 * N, C), C);
  const auto ssm_layers = static_cast<std::uint64_t>(c.ssm_blocks());
  std::uint64_t n = mul_sat(static_cast<std::uint64_t>(c.vocab_size) + static_cast<std::uint64_t>(c.max_seq_len), C);
  n = add_sat(n, mul_sat(static_cast<std::uint64_t>(c.num_layers), rest));
  n = add_sat(n, mul_sat(static_cast<std::uint64_t>(c.num_layers) - ssm_layers, attention));
  n = add_sat(n, mul_sat(ssm_layers, ssm));
  return add_sat(n, 2 * C);
}

// The SSM blocks of a file (those holding "h.{l}.ssm.C_re") and the hyper-parameters pax-ocl wrote
// into its metadata; c.block_kinds stays empty when there are none.
void read_ssm_blocks(const fs::path& file, const SafetensorsReader& in, const std::string& prefix, GptConfig& c) {
  std::vector<BlockKind> kinds;
  for (int l = 0; l < c.num_layers; ++l) {
    const bool ssm = in.entries().contains(prefix + hf_block_name(l, names::hf::kSsmTensors[0].hf));
    kinds.push_back(ssm ? BlockKind::kSsm : BlockKind::kAttention);
  }
  const auto first_ssm = std::find(kinds.begin(), kinds.end(), BlockKind::kSsm);
  if (first_ssm == kinds.end()) return;
  const nlohmann::json& meta = in.metadata();
  auto field = [&](std::string_view key) -> std::string {
    if (!meta.is_object() || !meta.contains(key) || !meta[std::string(key)].is_string()) {
      fail(file, fmt::format("has SSM blocks but no __metadata__ \"{}\": pax-ocl writes the SSM's frozen "
                             "hyper-parameters there; re-export the model with pax-ocl export", key));
    }
    return meta[std::string(key)].get<std::string>();
  };
  // The shortest period of the per-layer kinds is the BLOCK_KINDS pattern.
  std::size_t period = 1;
  while (period < kinds.size() &&
         (kinds.size() % period != 0 ||
          !std::equal(kinds.begin() + static_cast<std::ptrdiff_t>(period), kinds.end(), kinds.begin()))) {
    ++period;
  }
  c.block_kinds.assign(kinds.begin(), kinds.begin() + static_cast<std::ptrdiff_t>(period));
  const std::string& c_re = prefix + hf_block_name(static_cast<int>(first_ssm - kinds.begin()), names::hf::kSsmTensors[0].hf);
  const Shape& shape = in.entries().at(c_re).shape;
  if (shape.size() != 2 || shape[0] < 1 || shape[0] > 1 << 16) {
    fail(file, fmt::format("tensor {} has shape [{}], expected (SSM_NHEADS, MODEL_DIMS)", c_re, fmt::join(shape, ", ")));
  }
  c.ssm.state_size = static_cast<int>(shape[0]);
  c.ssm.hippo_type = field(names::hf::kMetaSsmHippoType);
  // The whole string is the number: std::stof read "0.02x" (or " 0.02") as 0.02, which files
  // without pax-ocl's full record (gpt_file_settings.h) then loaded.
  auto number = [&](std::string_view key, auto& value) {
    const std::string text = field(key);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      fail(file, fmt::format("__metadata__ \"{}\" is \"{}\", which is not a number", key, text));
    }
  };
  number(names::hf::kMetaSsmStepSize, c.ssm.step_size);
  number(names::hf::kMetaSsmLMax, c.ssm.l_max);
}

// dst (cols, rows) = transpose of src (rows, cols).
void transpose(const float* src, std::int64_t rows, std::int64_t cols, float* dst) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

// The layers h.0 .. h.{L-1} that tensor names mention; they must be contiguous.
int count_layers(const fs::path& file, const std::map<std::string, StEntry>& entries, const std::string& prefix) {
  std::set<int> layers;
  const std::string h = prefix + std::string(names::hf::kBlockPrefix);
  for (const auto& [name, e] : entries) {
    if (!name.starts_with(h)) continue;
    const char* first = name.data() + h.size();
    const char* last = name.data() + name.size();
    unsigned l = 0;
    const auto [end, ec] = std::from_chars(first, last, l);
    if (ec == std::errc() && end != last && *end == '.' && l < 1u << 24) layers.insert(static_cast<int>(l));
  }
  if (layers.empty()) fail(file, fmt::format("no transformer layers: missing tensor {}{}", prefix, hf_block_name(0, names::hf::kBlockTensors[0].hf)));
  for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
    if (!layers.contains(l)) fail(file, fmt::format("layer {}{} is missing but layer {} exists", h, l, *layers.rbegin()));
  }
  return static_cast<int>(layers.size());
}

}  // namespace

HostWeights load_llmc(const fs::path& file, std::size_t alignment) {
  const InFile in(file);
  LlmcHeader h{};
  if (in.size() < sizeof h) {
    fail(file, fmt::format("truncated: expected at least {} bytes (the llm.c header), got {}", sizeof h, in.size()));
  }
  in.read(0, h.data(), sizeof h);
  const GptConfig config = llmc_config(file, h);
  HostWeights w{config, 0, {}};
  // The header is untrusted: check the file holds what it claims before building anything of that size.
  const std::uint64_t expected = add_sat(sizeof h, mul_sat(llmc_floats(config), sizeof(float)));
  if (in.size() < expected) fail(file, fmt::format("truncated: expected {} bytes, got {}", expected, in.size()));
  if (in.size() > expected) {
    fail(file, fmt::format("{} trailing bytes: expected {} bytes, got {}; not an fp32 llm.c checkpoint of this header's shape",
                           in.size() - expected, expected, in.size()));
  }
  const ParameterLayout layout(config, alignment);
  w.alignment = layout.alignment();
  const auto order = llmc_order(layout, config.num_layers);
  w.data.assign(layout.total(), 0.0f);
  std::uint64_t pos = sizeof h;
  for (const TensorSpec* t : order) {
    in.read(pos, w.data.data() + t->offset, t->count * sizeof(float));
    pos += t->count * sizeof(float);
  }
  return w;
}

namespace {
// What each GPT format can hold (ConfigError naming the setting and the format that can).
void require_llmc_expressible(const GptConfig& c) {
  if (c.ssm_blocks() > 0) {
    throw ConfigError(fmt::format("an llm.c checkpoint holds attention blocks only; this model has SSM blocks "
                                  "(BLOCK_KINDS={}): save as .safetensors instead", block_kinds_text(c.block_kinds)));
  }
  if (c.hidden_dims != 4 * c.model_dims || c.attention_dims() != c.model_dims) {
    throw ConfigError(fmt::format(
        "an llm.c checkpoint needs HIDDEN_DIMS=4*MODEL_DIMS and NUM_HEADS*DIMS_PER_HEAD=MODEL_DIMS; got "
        "HIDDEN_DIMS={} MODEL_DIMS={} NUM_HEADS={} DIMS_PER_HEAD={}: save as safetensors instead",
        c.hidden_dims, c.model_dims, c.num_heads, c.dims_per_head));
  }
}
void require_hf_gpt2_expressible(const GptConfig& c) {
  if (c.attention_dims() != c.model_dims) {
    throw ConfigError(fmt::format("Hugging Face GPT-2 weights need NUM_HEADS*DIMS_PER_HEAD=MODEL_DIMS; got {}*{} != {}",
                                  c.num_heads, c.dims_per_head, c.model_dims));
  }
}
}  // namespace

void save_llmc(const fs::path& file, const HostWeights& w) {
  const GptConfig& c = w.config.gpt();
  c.validate();
  require_llmc_expressible(c);
  const ParameterLayout layout(c, w.alignment);
  require_data_size(w, layout);
  LlmcHeader h{};
  h[0] = kLlmcMagic;
  h[1] = kLlmcVersion;
  h[2] = c.max_seq_len;
  h[3] = c.vocab_size;
  h[4] = c.num_layers;
  h[5] = c.num_heads;
  h[6] = c.model_dims;
  h[7] = c.padded_vocab();
  AtomicFile out(file);
  out.write(h.data(), sizeof h);
  for (const TensorSpec* t : llmc_order(layout, c.num_layers)) out.write(w.data.data() + t->offset, t->count * sizeof(float));
  out.commit();
}

HostWeights load_safetensors(const fs::path& file, std::optional<int> num_heads, std::size_t alignment) {
  const SafetensorsReader in(file);
  const auto& entries = in.entries();

  // Saved from GPT2LMHeadModel (prefixed) or GPT2Model (bare); missing tensors are named prefixed.
  const std::string wte(names::hf::kTokenEmbedding);
  const std::string prefix = !entries.contains(kHfPrefix + wte) && entries.contains(wte)
                                 ? ""
                                 : kHfPrefix;
  auto need = [&](const std::string& name) -> const StEntry& {
    const auto it = entries.find(prefix + name);
    if (it == entries.end()) fail(file, fmt::format("missing tensor {}{}; expected a Hugging Face GPT-2 model", prefix, name));
    return it->second;
  };
  // Dimensions come from three 2-D tensors; every tensor's full shape is checked below.
  // Their dtype first: a float16 file is named as such, not taken for a truncated float32 one below.
  auto dims2 = [&](const std::string& name) {
    if (const StEntry& e = need(name); e.dtype != "F32") {
      fail(file, fmt::format("tensor {}{} has dtype {}; only F32 is supported: convert the model to float32 first",
                             prefix, name, e.dtype));
    }
    const Shape& s = need(name).shape;
    if (s.size() != 2) fail(file, fmt::format("tensor {}{} has shape [{}], expected 2 dimensions", prefix, name, fmt::join(s, ", ")));
    for (std::int64_t d : s) {
      if (d < 1 || d > std::numeric_limits<int>::max() / 4) {
        fail(file, fmt::format("tensor {}{} has unusable shape [{}]", prefix, name, fmt::join(s, ", ")));
      }
    }
    return std::pair<int, int>(static_cast<int>(s[0]), static_cast<int>(s[1]));
  };
  HostWeights w;
  GptConfig c;
  std::tie(c.vocab_size, c.model_dims) = dims2(wte);
  c.max_seq_len = dims2(std::string(names::hf::kPositionEmbedding)).first;
  c.num_layers = count_layers(file, entries, prefix);
  c.hidden_dims = dims2(hf_block_name(0, names::hf::kMlpFcWeight)).second;
  c.padded_vocab_size = 0;
  read_ssm_blocks(file, in, prefix, c);
  complete_gpt_settings(file, in.metadata(), num_heads, c);
  validate_from_file(file, c);
  w.config = c;
  // Every tensor the config implies must be in the file with its full shape (checked below), so the
  // file must hold at least their bytes: check that before sizing anything by the config (layer names
  // cost nothing, and zero-element tensors take no bytes, so names alone could claim huge models).
  if (const std::uint64_t implied = mul_sat(hf_floats(c), sizeof(float)); implied > in.data_bytes()) {
    fail(file, fmt::format("the tensor names and shapes describe a {}-layer model of {} bytes, but the file holds {} "
                           "bytes of data: truncated or not a Hugging Face GPT-2 model",
                           c.num_layers, implied, in.data_bytes()));
  }

  const ParameterLayout layout(c, alignment);
  w.alignment = layout.alignment();
  w.data.assign(layout.total(), 0.0f);
  std::vector<float> staged;
  for (const HfTensor& t : hf_tensors(layout, c)) {
    const StEntry& e = need(t.name);
    if (e.dtype != "F32") {
      fail(file, fmt::format("tensor {}{} has dtype {}; only F32 is supported: convert the model to float32 first",
                             prefix, t.name, e.dtype));
    }
    if (e.shape != t.shape) {
      fail(file, fmt::format("tensor {}{} has shape [{}], expected [{}]", prefix, t.name, fmt::join(e.shape, ", "),
                             fmt::join(t.shape, ", ")));
    }
    const std::size_t count = element_count(t.shape);
    float* dst = w.data.data() + t.ours->offset;
    if (!t.conv1d) {
      in.read(e, dst);
      continue;
    }
    staged.resize(count);
    in.read(e, staged.data());
    transpose(staged.data(), t.shape[0], t.shape[1], dst);
  }
  return w;
}

void save_safetensors(const fs::path& file, const HostWeights& w) {
  const GptConfig& c = w.config.gpt();
  c.validate();
  require_hf_gpt2_expressible(c);
  const ParameterLayout layout(c, w.alignment);
  require_data_size(w, layout);
  const auto tensors = hf_tensors(layout, c);

  std::vector<std::pair<std::string, Shape>> names;
  for (const HfTensor& t : tensors) names.emplace_back(kHfPrefix + t.name, t.shape);
  SafetensorsWriter out(file, names, gpt_settings_metadata(c));
  std::vector<float> staged;
  for (const HfTensor& t : tensors) {
    const std::size_t count = element_count(t.shape);
    const float* src = w.data.data() + t.ours->offset;
    if (t.conv1d) {
      staged.resize(count);
      transpose(src, t.shape[1], t.shape[0], staged.data());
      src = staged.data();
    }
    out.add(std::span<const float>(src, count));
  }
  out.commit();
}

namespace {
bool is_safetensors(const fs::path& file) { return file.extension() == ".safetensors"; }
}  // namespace

HostWeights load_weights_file(const fs::path& file, std::optional<int> num_heads, std::size_t alignment) {
  if (!is_hf_llama_checkpoint(file) && is_safetensors(file)) return load_safetensors(file, num_heads, alignment);
  HostWeights w = is_hf_llama_checkpoint(file) ? load_hf_llama(file, alignment) : load_llmc(file, alignment);
  require_heads_agree(file, num_heads, w.config.visit([](const auto& c) { return c.num_heads; }),
                      w.config.is_llama() ? "its config.json" : "its llm.c header");
  return w;
}

void check_weights_destination(const fs::path& file, const ModelConfig& model, std::string_view flag,
                               const fs::path& created_first) {
  const std::string what = flag.empty() ? file.string() : fmt::format("--{}={}", flag, file.string());
  try {
    if (model.is_llama()) {
      if (file.extension() == ".bin") {
        throw ConfigError("the llm.c format (.bin) holds GPT-2 models only; for this LLaMA give FILE.safetensors "
                          "(config.json is written beside it) or a directory (config.json and model.safetensors)");
      }
    } else if (is_safetensors(file)) {
      require_hf_gpt2_expressible(model.gpt());
    } else {
      require_llmc_expressible(model.gpt());
    }
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", what, e.what()));
  }
  // The output goes in a directory that exists: a file's directory, or a LLaMA directory's parent
  // (that directory itself is created when new). Nothing creates a missing path on the way.
  std::error_code ec;
  const bool directory_output = model.is_llama() && !is_safetensors(file);
  if (directory_output && fs::exists(file, ec)) {
    if (const std::string why = why_not_directory(file); !why.empty()) {
      throw ConfigError(fmt::format("{}: {}; give a directory or FILE.safetensors", what, why));
    }
  } else if (!directory_output && fs::is_directory(file, ec)) {
    throw ConfigError(fmt::format("{}: is a directory; give a file name ({})", what,
                                  model.is_llama() ? "FILE.safetensors" : "FILE.safetensors or FILE.bin"));
  }
  fs::path dir = directory_output && fs::exists(file, ec) ? file : file.parent_path();
  if (dir.empty()) dir = ".";
  // The job directory, created (with its parents) before the file is written: the nearest
  // directory above it that exists must take it.
  if (!created_first.empty() && !fs::exists(dir, ec) &&
      fs::weakly_canonical(dir, ec) == fs::weakly_canonical(created_first, ec)) {
    while (!fs::exists(dir, ec)) {
      const fs::path up = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
      if (up == dir) break;
      dir = up;
    }
  }
  if (const std::string why = why_not_directory(dir); !why.empty()) {
    throw ConfigError(fmt::format("{}: the directory {}: {}; create it first or give another path", what, dir.string(), why));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw ConfigError(fmt::format("{}: the directory {} is not writable; give another path", what, dir.string()));
  }
}

void save_weights_file(const fs::path& file, const HostWeights& w) {
  check_weights_destination(file, w.config, "", {});
  if (w.config.is_llama()) {
    save_hf_llama(file, w);
  } else if (is_safetensors(file)) {
    save_safetensors(file, w);
  } else {
    save_llmc(file, w);
  }
}

}  // namespace paxocl::models
