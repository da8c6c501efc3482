#include "config/model_settings.h"

#include <utility>

#include <fmt/format.h>

namespace paxocl::config {

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// The defining settings of `e`, from its validated ModelConfig (so NUM_KV_HEADS 0 and NUM_HEADS
// read the same); floats as the float the model holds (1e-05, not 9.99999974737875e-06).
Settings defining_settings(const Experiment& e) {
  const models::ModelConfig model = e.model_config();
  Settings s;
  auto add = [&](const char* name, const auto& value) { s.emplace_back(name, fmt::format("{}", value)); };
  add("ARCHITECTURE", model.architecture());
  model.visit([&](const auto& c) {
    add("NUM_LAYERS", c.num_layers);
    add("MODEL_DIMS", c.model_dims);
    add("HIDDEN_DIMS", c.hidden_dims);
    add("NUM_HEADS", c.num_heads);
    add("DIMS_PER_HEAD", c.dims_per_head);
    add("VOCAB_SIZE", c.vocab_size);
  });
  s.emplace_back("TOKENIZER", fmt::format("\"{}\"", e.get_string("TOKENIZER")));
  if (model.is_gpt()) {
    const models::GptConfig& c = model.gpt();
    add("MAX_SEQ_LEN", c.max_seq_len);
    add("BLOCK_KINDS", c.block_kinds.empty() ? std::string("attention") : models::block_kinds_text(c.block_kinds));
    if (c.ssm_blocks() > 0) {
      add("SSM_NHEADS", c.ssm.state_size);
      add("SSM_STEP_SIZE", c.ssm.step_size);
      add("SSM_HIPPO_TYPE", c.ssm.hippo_type);
    }
  } else {
    const models::LlamaConfig& c = model.llama();
    add("NUM_KV_HEADS", c.num_kv_heads);
    add("ROPE_BASE", c.rope_base);
    add("NORM_EPSILON", c.norm_epsilon);
  }
  return s;
}

const std::string* find(const Settings& s, const std::string& name) {
  for (const auto& [n, v] : s) {
    if (n == name) return &v;
  }
  return nullptr;
}

}  // namespace

std::vector<SettingDifference> model_setting_differences(const Experiment& saved, const Experiment& requested) {
  const Settings a = defining_settings(saved);
  const Settings b = defining_settings(requested);
  std::vector<SettingDifference> out;
  auto compare = [&](const std::string& name) {
    const std::string* x = find(a, name);
    const std::string* y = find(b, name);
    if (x && y && *x == *y) return;
    for (const SettingDifference& d : out) {
      if (d.name == name) return;  // listed already
    }
    out.push_back({name, x ? *x : "(unused)", y ? *y : "(unused)"});
  };
  for (const auto& [name, value] : a) compare(name);
  for (const auto& [name, value] : b) compare(name);
  return out;
}

std::string describe_differences(const std::vector<SettingDifference>& differences) {
  std::string text;
  for (const SettingDifference& d : differences) {
    if (!text.empty()) text += ", ";
    text += text.empty() ? fmt::format("{} {} (saved) vs {} (requested)", d.name, d.saved, d.requested)
                         : fmt::format("{} {} vs {}", d.name, d.saved, d.requested);
  }
  return text;
}

}  // namespace paxocl::config
