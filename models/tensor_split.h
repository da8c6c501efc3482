// Tensor parallelism (Megatron-LM / praxis's 'mdl' sharding): how a model's tensors split over the
// mesh's tensor axis of size t, as seen by the device of tensor rank r.
//   column-parallel (split output rows):  the fused QKV projection by heads (GPT: q, k, v each D/t
//     rows; LLaMA: H/t query heads, and Hkv/t kv heads when t divides Hkv, else the one kv head
//     its query heads use, replicated on t/Hkv devices), the MLP's first matrix (GPT fc H/t rows
//     and bias; LLaMA gate_up F/t gate rows then F/t up rows);
//   row-parallel (split input columns): the attention output projection (D/t columns) and the MLP's
//     second matrix (H/t or F/t columns); their outputs are partial sums, all-reduced;
//   vocabulary-parallel: the token embedding and the LM head (GPT: the same tied table), Vp/t rows;
//   replicated: the norms' scales and biases, and the SSM blocks' c_re, c_im and d (every device the
//     same values and gradients: each runs the SSM whole);
//   rank 0 only: the row-parallel biases and GPT's position table, added once before the
//     all-reduce that follows them (the sum then holds them once).
// A device's model is built over its local tensors (same names, local shapes) and laid out as any
// ParameterLayout; TensorSplit maps whole (global) flat images to a device's and back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "models/parameter_layout.h"
#include "models/tensor_def.h"

namespace paxocl::models {

// A device's place on the tensor axis: rank in [0, size).
struct TensorShard {
  int rank = 0;
  int size = 1;
  bool split() const { return size > 1; }
};

// The sizes a tensor-parallel device computes with.
struct TensorLocalDims {
  int heads = 0;            // query heads (GPT: heads)
  int kv_heads = 0;         // kv heads held (GPT: = heads)
  int kv_head_begin = 0;    // the first one's global index
  bool kv_replicated = false;  // LLaMA with t > Hkv: each kv head held by t/Hkv devices
  int hidden = 0;           // MLP width held (GPT H/t, LLaMA F/t)
  int vocab_rows = 0;       // Vp/t rows of the embedding (and head)
  int vocab_begin = 0;      // the first one's token id
  int vocab_real = 0;       // of those rows, real tokens (the rest padding): 0 .. vocab_rows
  bool rank0_tensors = true;  // holds the row-parallel biases (and GPT's wpe)
};

// ConfigError naming the numbers when `config` cannot split over `size` devices (heads, kv heads,
// hidden units or the padded vocabulary not divisible).
void validate_tensor_split(const ModelConfig& config, int size);
TensorLocalDims tensor_local_dims(const ModelConfig& config, TensorShard shard);

// One local tensor: the global tensor's row blocks (vectors: element blocks), concatenated, and
// of each row the columns [col_begin, col_begin + cols) (vectors: 0, 1).
struct TensorSlice {
  struct Rows {
    std::int64_t begin = 0, count = 0;
    bool owned = true;  // false: a replica of rows another rank owns (counted and saved once)
  };
  std::string name;
  std::vector<Rows> rows;
  std::int64_t col_begin = 0, cols = 1;
};
// The local tensors of `shard`, in the global list's order (tensors absent on this rank left out).
std::vector<TensorSlice> tensor_slices(const ModelConfig& config, TensorShard shard);
// The local TensorDefs: the global ones with local shapes (for ParameterLayout).
std::vector<TensorDef> local_tensor_defs(const ModelConfig& config, TensorShard shard);

class TensorSplit {
 public:
  // `global`: the whole model's layout; `local`: the device's (built from local_tensor_defs).
  TensorSplit(const ModelConfig& config, TensorShard shard, const ParameterLayout& global, const ParameterLayout& local);

  std::vector<float> extract(std::span<const float> global) const;         // global image -> this device's
  void place(std::span<const float> local, std::span<float> global) const;  // its owned elements back
  // The local layout's ranges holding replicas (not owned): left out of the global gradient norm.
  std::vector<ParameterLayout::Range> replica_ranges() const;

 private:
  template <typename Visit>
  void for_each_row(Visit&& visit) const;
  const ParameterLayout& global_;
  const ParameterLayout& local_;
  std::vector<TensorSlice> slices_;
};

}  // namespace paxocl::models
