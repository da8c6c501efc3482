// ModelConfig: which architecture a job trains, with its hyper-parameters. The job, the step
// programs, checkpoints, the optimizer and the input read only what every architecture has (the
// accessors below); a family's own code (its model, its weight formats) takes its alternative.
//
// Adding a family: its config struct (with the members the accessors read: num_layers,
// max_seq_len, vocab_size, init_std, validate(), flops_per_token(T)) joins the variant, its
// tensor list gets an overload of tensor_defs_of(), and build_model (model_factory.h) learns to
// build it. Nothing in scheduler/, checkpoint/ or the optimizer changes.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "models/gpt_config.h"
#include "models/llama_config.h"
#include "models/tensor_def.h"

namespace paxocl::models {

class ModelConfig {
 public:
  ModelConfig() = default;
  ModelConfig(GptConfig gpt) : family_(gpt) {}        // NOLINT(google-explicit-constructor): a GPT is a model
  ModelConfig(LlamaConfig llama) : family_(llama) {}  // NOLINT(google-explicit-constructor): so is a LLaMA

  std::string_view architecture() const;  // "gpt" | "llama"
  std::string describe() const;           // the architecture and its shapes, for messages
  void validate() const;                  // ConfigError naming the first bad hyper-parameter
  int num_blocks() const;                 // NUM_LAYERS: the transformer blocks FSDP walks
  int max_seq_len() const;                // MAX_SEQ_LEN
  int vocab_size() const;                 // VOCAB_SIZE: token ids the input may produce
  float init_std() const;                 // INIT_STD
  void set_init_std(float std);
  double flops_per_token(int seq_len) const;  // model FLOPs of a training step, per token
  std::vector<TensorDef> tensor_defs() const;  // the parameters, in the architecture's order

  bool is_gpt() const { return std::holds_alternative<GptConfig>(family_); }
  bool is_llama() const { return std::holds_alternative<LlamaConfig>(family_); }
  // A family's hyper-parameters; ConfigError naming the architecture when it is another one.
  const GptConfig& gpt() const;
  const LlamaConfig& llama() const;

  template <typename Visitor>
  decltype(auto) visit(Visitor&& v) const {
    return std::visit(std::forward<Visitor>(v), family_);
  }

 private:
  std::variant<GptConfig, LlamaConfig> family_;
};

}  // namespace paxocl::models
