#include "models/model_config.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {
std::string_view name_of(const GptConfig&) { return "gpt"; }
std::string_view name_of(const LlamaConfig&) { return "llama"; }
}  // namespace

std::string_view ModelConfig::architecture() const {
  return visit([](const auto& c) { return name_of(c); });
}
std::string ModelConfig::describe() const {
  return fmt::format("{} {}", architecture(), visit([](const auto& c) { return c.describe(); }));
}
void ModelConfig::validate() const {
  visit([](const auto& c) { c.validate(); });
}
int ModelConfig::num_blocks() const {
  return visit([](const auto& c) { return c.num_layers; });
}
int ModelConfig::max_seq_len() const {
  return visit([](const auto& c) { return c.max_seq_len; });
}
int ModelConfig::vocab_size() const {
  return visit([](const auto& c) { return c.vocab_size; });
}
float ModelConfig::init_std() const {
  return visit([](const auto& c) { return c.init_std; });
}
void ModelConfig::set_init_std(float std) {
  std::visit([std](auto& c) { c.init_std = std; }, family_);
}
double ModelConfig::flops_per_token(int seq_len) const {
  return visit([seq_len](const auto& c) { return c.flops_per_token(seq_len); });
}
std::vector<TensorDef> ModelConfig::tensor_defs() const {
  return visit([](const auto& c) { return tensor_defs_of(c); });
}

const GptConfig& ModelConfig::gpt() const {
  if (const GptConfig* c = std::get_if<GptConfig>(&family_)) return *c;
  throw ConfigError(fmt::format("this needs a GPT model; the job's architecture is {}", architecture()));
}

const LlamaConfig& ModelConfig::llama() const {
  if (const LlamaConfig* c = std::get_if<LlamaConfig>(&family_)) return *c;
  throw ConfigError(fmt::format("this needs a LLaMA model; the job's architecture is {}", architecture()));
}

}  // namespace paxocl::models
