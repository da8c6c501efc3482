// Model configurations the tests build (GPT's from its hyper-parameters in Pax's order), and
// random parameters for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/rng.h"
#include "models/gpt_config.h"
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
