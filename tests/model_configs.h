// Model configurations the tests build (GPT's from its hyper-parameters in Pax's order), and
// random parameters for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/rng.h"
#include "inputs/batch.h"
#include "models/gpt_config.h"
#include "models/llama_config.h"
#include "models/parameter_layout.h"

namespace paxocl::testing {

inline models::GptConfig gpt_config(int layers, int dims, int hidden, int heads, int dims_per_head, int seq_len,
                                    int vocab) {
  models::GptConfig c;
  c.num_layers = layers;
  c.model_dims = dims;
  c.hidden_dims = hidden;
  c.num_heads = heads;
  c.dims_per_head = dims_per_head;
  c.max_seq_len = seq_len;
  c.vocab_size = vocab;
  return c;
}

// A LLaMA with grouped heads (4 query heads over 2 key/value heads), an attention width (16) other
// than C (12), a hidden width (20) that is no multiple of 16, and a vocabulary padded from 23 to 128.
inline models::LlamaConfig tiny_llama_config(int layers = 2) {
  models::LlamaConfig c;
  c.num_layers = layers;
  c.model_dims = 12;
  c.hidden_dims = 20;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.dims_per_head = 4;
  c.max_seq_len = 9;
  c.vocab_size = 23;
  c.rope_base = 100.0f;  // positions turn visibly within 9 tokens
  return c;
}

// B sequences of T random ids and targets below `vocab`, every fifth position padding (weight 0).
inline inputs::Batch random_batch(int vocab, int B, int T, std::uint64_t seed) {
  Rng rng(seed);
  inputs::Batch b{B, T, {}, {}, {}};
  for (int i = 0; i < B * T; ++i) {
    b.ids.push_back(static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(vocab)));
    b.targets.push_back(static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(vocab)));
    b.weights.push_back(i % 5 == 3 ? 0.0f : 1.0f);
  }
  return b;
}

// Every real parameter ~ N(0, std^2), norm scales (".scale" tensors) around 1, so biases, norms
// and activations are all exercised; padding and alignment gaps stay 0.
inline std::vector<float> random_parameters(const models::ParameterLayout& layout, std::uint64_t seed, double std = 0.3) {
  Rng rng(seed);
  std::vector<float> flat(layout.total(), 0.0f);
  for (const auto& t : layout.tensors()) {
    const bool scale = t.name.find(".scale") != std::string::npos;
    for (std::size_t i = 0; i < t.count; ++i) flat[t.offset + i] = static_cast<float>((scale ? 1.0 : 0.0) + std * rng.normal());
  }
  return flat;
}

}  // namespace paxocl::testing
