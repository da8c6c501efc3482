// Fuzzes how a GPT weights file's settings are read from its safetensors __metadata__, the SSM
// blocks' above all (models/weights_io.cpp's SSM hyper-parameters, models/gpt_file_settings.h's
// record of every setting): the input (fuzz/ssm_metadata_input.h) is a string map written as the
// __metadata__ of a file holding one of four fixed models' tensors, loaded by load_safetensors.
// Properties of a file that loads: its block kinds and state count are its tensors'; its SSM
// settings are within SsmConfig's bounds (a known HiPPO type, a finite step size above 0, SSM_L_MAX
// 0 or at least MAX_SEQ_LEN) and are what the metadata spells: the step size and SSM_L_MAX are the
// numbers their whole strings read as (std::from_chars), not a prefix of them; and pax-ocl's export
// (save_safetensors) writes them so that they load again unchanged, with the weights bit for bit.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/safetensors.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/ssm_metadata_input.h"
#include "models/tensor_names.h"
#include "models/weights_io.h"

using namespace paxocl;
namespace fs = std::filesystem;
namespace ssm_input = fuzz::ssm_metadata_input;
namespace hf = models::tensor_names::hf;

namespace {

// A model's tensors as pax-ocl's export writes them, to write again under any metadata.
struct Tensors {
  std::vector<std::pair<std::string, TensorShape>> shapes;
  std::vector<std::vector<float>> values;
};

const Tensors& tensors_of(std::size_t model) {
  static std::array<std::optional<Tensors>, 4> made;
  if (!made[model]) {
    const fs::path file = fuzz::scratch_dir() / "template.safetensors";
    models::save_safetensors(file, fuzz::tiny_weights(ssm_input::models()[model]));
    const SafetensorsReader reader(file);
    Tensors t;
    for (const auto& [name, entry] : reader.entries()) {
      t.shapes.emplace_back(name, entry.shape);
      t.values.push_back(reader.read_f32(name));
    }
    made[model] = std::move(t);
  }
  return *made[model];
}

// The whole of `text` read as a number, or nullopt.
template <typename T>
std::optional<T> whole_number(const std::string& text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

bool same_settings(const models::GptConfig& a, const models::GptConfig& b) {
  return a.num_layers == b.num_layers && a.model_dims == b.model_dims && a.hidden_dims == b.hidden_dims &&
         a.num_heads == b.num_heads && a.dims_per_head == b.dims_per_head && a.max_seq_len == b.max_seq_len &&
         a.vocab_size == b.vocab_size && a.padded_vocab() == b.padded_vocab() && a.block_kinds == b.block_kinds &&
         (a.ssm_blocks() == 0 || (a.ssm.state_size == b.ssm.state_size && a.ssm.step_size == b.ssm.step_size &&
                                  a.ssm.hippo_type == b.ssm.hippo_type && a.ssm.l_max == b.ssm.l_max));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t model = data[0] & ssm_input::kModelBits;
  const models::GptConfig& expected = ssm_input::models()[model];
  const nlohmann::ordered_json metadata =
      ssm_input::parse_metadata(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  const fs::path file = fuzz::scratch_dir() / "weights.safetensors";
  try {
    const Tensors& t = tensors_of(model);
    SafetensorsWriter out(file, t.shapes, metadata);
    for (const auto& v : t.values) out.add(v);
    out.commit();
  } catch (const nlohmann::json::type_error&) {
    return 0;  // not UTF-8: no safetensors header (JSON) holds these bytes
  }

  const std::optional<int> heads = (data[0] & ssm_input::kGiveHeads) != 0 ? std::optional(fuzz::kTinyHeads) : std::nullopt;
  std::optional<models::HostWeights> w;
  try {
    w = models::load_safetensors(file, heads, 1);
  } catch (const DataError&) {
  } catch (const ConfigError&) {
  }
  if (!w) return 0;
  const models::GptConfig& c = w->config.gpt();
  fuzz::require(c.block_kinds.empty() ? expected.block_kinds.empty() : c.block_kinds == expected.block_kinds,
                "the block kinds are not the tensors'");
  if (c.ssm_blocks() > 0) {
    const models::SsmConfig& s = c.ssm;
    fuzz::require(s.state_size == expected.ssm.state_size, "the SSM state count is not the tensors'");
    fuzz::require(s.hippo_type == "ss4d-1d" || s.hippo_type == "ss4d-legs" || s.hippo_type == "ss4d-lagt",
                  "an unknown HiPPO type was accepted");
    fuzz::require(std::isfinite(s.step_size) && s.step_size > 0.0f, "a step size that is not a finite number above 0 was accepted");
    fuzz::require(s.l_max == 0 || s.l_max >= c.max_seq_len, "an SSM_L_MAX below MAX_SEQ_LEN was accepted");
    fuzz::require(whole_number<float>(metadata.value(std::string(hf::kMetaSsmStepSize), "")) == s.step_size,
                  "the step size is not the number its metadata string spells");
    fuzz::require(whole_number<int>(metadata.value(std::string(hf::kMetaSsmLMax), "")) == s.l_max,
                  "SSM_L_MAX is not the number its metadata string spells");
    fuzz::require(metadata.value(std::string(hf::kMetaSsmHippoType), "") == s.hippo_type,
                  "the HiPPO type is not the metadata's");
  }

  const fs::path copy = fuzz::scratch_dir() / "exported.safetensors";
  models::save_safetensors(copy, *w);  // anything this loads must export
  const models::HostWeights again = models::load_safetensors(copy, std::nullopt, 1);
  fuzz::require(same_settings(again.config.gpt(), c), "the settings changed in an export + load round trip");
  fuzz::require(again.data.size() == w->data.size() &&
                    std::memcmp(again.data.data(), w->data.data(), w->data.size() * sizeof(float)) == 0,
                "weights changed in an export + load round trip");
  return 0;
}
