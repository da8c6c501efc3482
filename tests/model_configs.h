// GPT configurations the tests build, from their hyper-parameters in Pax's order.
#pragma once

#include "models/gpt_config.h"

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

}  // namespace paxocl::testing
