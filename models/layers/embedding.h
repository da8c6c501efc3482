// Embedding: token + learned position embedding, or the token embedding alone (no wpe: LLaMA,
// whose positions are rotary, inside attention).
//   ids (B, T) -> x (B*T, C) = wte[ids] + wpe[t]          wte (Vp, C), wpe (MAX_SEQ_LEN, C)
// Without wpe the kernels read one zero row for every position, so one kernel serves both.
// backward(dx) accumulates dwpe and dwte. Repeated tokens are summed without atomics: forward
// groups positions by token on the host (a CSR of the batch) and backward gives each token row
// one work-item that adds its positions in order, so gradients are bit-reproducible.
// x and dx are in the activation dtype `act`; the tables are read through Param::compute.
// Vocabulary-parallel (tensor parallelism): wte holds rows [begin, begin + rows) of the table; other
// tokens contribute zero rows, so the sum over the tensor group (the model's) is the embedding.
#pragma once

#include <optional>
#include <vector>

#include "models/layers/layer_context.h"

namespace paxocl::models {

// The rows of the token table a device holds (vocabulary-parallel), by token id.
struct VocabRange {
  std::size_t begin = 0, rows = SIZE_MAX;  // the whole table
};

class Embedding {
 public:
  Embedding(const device::Device& device, device::DType act, Param wte, std::optional<Param> wpe, std::size_t dims,
            std::size_t max_rows, const std::string& name, VocabRange vocab = {});

  // `ids` holds ctx.rows() token ids; every id must be < Vp (the model checks the batch). Their
  // positions are first_position .. first_position + T - 1 (decoding continues a sequence).
  ActBuffer& forward(LayerContext& ctx, const std::vector<int>& ids, std::size_t first_position = 0);
  void backward(LayerContext& ctx, const ActBuffer& dx);

 private:
  Param wte_;
  std::optional<Param> wpe_;
  ActBuffer zero_row_;  // (1, C) zeros, read as the position table when there is no wpe
  bool zero_row_written_ = false;
  std::size_t dims_;
  VocabRange vocab_;
  device::Buffer<cl_int> ids_, tokens_, starts_, positions_;
  std::size_t unique_tokens_ = 0;
  ActBuffer x_;
};

}  // namespace paxocl::models
