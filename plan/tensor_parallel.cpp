#include "plan/tensor_parallel.h"

#include "common/errors.h"
#include "models/tensor_split.h"

namespace paxocl::plan {

// The runtime's own split (models/tensor_split.h) is the one source: the plan counts what the
// step programs allocate.

std::optional<std::string> tensor_split_error(const models::ModelConfig& model, int tensor) {
  try {
    models::validate_tensor_split(model, tensor);
  } catch (const ConfigError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

TensorShard tensor_shard(const models::ModelConfig& model, int tensor) {
  const models::TensorLocalDims d = models::tensor_local_dims(model, models::TensorShard{0, tensor});
  const int hs = model.visit([](const auto& c) { return c.dims_per_head; });
  TensorShard s;
  s.heads = d.heads;
  s.kv_heads = d.kv_heads;
  s.hidden = d.hidden;
  s.padded_vocab = d.vocab_rows;
  s.attention_dims = d.heads * hs;
  s.qkv_rows = (d.heads + 2 * d.kv_heads) * hs;
  return s;
}

std::vector<int> tensor_sizes(const models::ModelConfig& model, int most) {
  std::vector<int> sizes;
  for (int t = 1; t <= most; ++t) {
    if (!tensor_split_error(model, t)) sizes.push_back(t);
  }
  return sizes;
}

std::vector<models::TensorDef> tensor_rank_defs(const models::ModelConfig& model, int tensor) {
  return models::local_tensor_defs(model, models::TensorShard{0, tensor});
}

}  // namespace paxocl::plan
