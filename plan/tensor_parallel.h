// Tensor parallelism as the plan counts it (issue 20; the runtime is being built to the same
// split): the tensor axis's t devices each hold
//   GPT:   q, k and v rows of NUM_HEADS / t heads (qkv.w (3D/t, C), qkv.b (3D/t)), the attention
//          output's columns (attn.proj.w (C, D/t)), HIDDEN_DIMS / t rows of mlp.fc (w (H/t, C),
//          b (H/t)) and columns of mlp.proj (C, H/t), Vp / t rows of wte (the tied head too);
//   LLaMA: NUM_HEADS / t query heads and NUM_KV_HEADS / t key/value heads when t divides
//          NUM_KV_HEADS, else one key/value head (replicated t / NUM_KV_HEADS times, so
//          NUM_KV_HEADS must divide t); HIDDEN_DIMS / t gate rows + HIDDEN_DIMS / t up rows of
//          mlp.gate_up, the columns of attn.proj and mlp.down; Vp / t rows of embed and lm_head;
//   both:  norms replicated; the row-parallel biases (attn.proj.b, mlp.proj.b) and GPT's position
//          table (wpe) on tensor rank 0 only, which therefore holds the most.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "models/tensor_def.h"

namespace paxocl::plan {

// What one device of a tensor group computes with: heads, kv heads, MLP width and vocabulary rows.
struct TensorShard {
  int heads = 0, kv_heads = 0, hidden = 0, padded_vocab = 0;
  int attention_dims = 0;  // heads x DIMS_PER_HEAD
  int qkv_rows = 0;        // the fused projection's rows: (heads + 2 kv_heads) x DIMS_PER_HEAD (GPT: 3 heads x hs)
};

// Why `tensor` devices cannot split `model`, in one line naming the numbers ("NUM_HEADS=12 is not
// divisible by tensor=5"); nothing when they can.
std::optional<std::string> tensor_split_error(const models::ModelConfig& model, int tensor);
// The shard of each device of a group of `tensor` (ConfigError from tensor_split_error otherwise).
TensorShard tensor_shard(const models::ModelConfig& model, int tensor);
// The tensor sizes that split `model` (1 first), up to `most`.
std::vector<int> tensor_sizes(const models::ModelConfig& model, int most);
// The parameters tensor rank 0 holds: the model's TensorDefs (same names and order) cut as above.
std::vector<models::TensorDef> tensor_rank_defs(const models::ModelConfig& model, int tensor);

}  // namespace paxocl::plan
