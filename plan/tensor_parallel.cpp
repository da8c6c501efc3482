#include "plan/tensor_parallel.h"

#include <map>
#include <type_traits>
#include <string_view>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/tensor_names.h"

namespace paxocl::plan {

namespace {

namespace names = models::tensor_names;

// How a tensor is cut across the tensor axis: its rows or columns become the shard's width, or
// it stays whole (replicated norms, and on rank 0 the row-parallel biases and wpe).
enum class Cut { kWhole, kQkvRows, kAttentionColumns, kHiddenRows, kGateUpRows, kHiddenColumns, kVocabRows };

// Every tensor a family declares, by its name outside the blocks or its suffix inside them.
const std::map<std::string_view, Cut, std::less<>>& cuts(bool gpt) {
  static const std::map<std::string_view, Cut, std::less<>> gpt_cuts = {
      {names::kTokenEmbedding, Cut::kVocabRows}, {names::kQkvWeight, Cut::kQkvRows},
      {names::kQkvBias, Cut::kQkvRows},          {names::kAttnProjWeight, Cut::kAttentionColumns},
      {names::kFcWeight, Cut::kHiddenRows},      {names::kFcBias, Cut::kHiddenRows},
      {names::kFcProjWeight, Cut::kHiddenColumns}};
  static const std::map<std::string_view, Cut, std::less<>> llama_cuts = {
      {names::llama::kTokenEmbedding, Cut::kVocabRows},     {names::llama::kLmHead, Cut::kVocabRows},
      {names::llama::kQkvWeight, Cut::kQkvRows},            {names::llama::kAttnProjWeight, Cut::kAttentionColumns},
      {names::llama::kGateUpWeight, Cut::kGateUpRows},      {names::llama::kDownWeight, Cut::kHiddenColumns}};
  return gpt ? gpt_cuts : llama_cuts;
}

// "h3.attn.qkv.w" -> "attn.qkv.w"; names outside the blocks stay as they are.
std::string_view suffix_of(const models::TensorDef& d) {
  const std::string_view name = d.name;
  return d.block < 0 ? name : name.substr(name.find('.') + 1);
}

struct Widths {
  int heads, kv_heads, hidden, padded_vocab, dims_per_head;
};
Widths widths_of(const models::ModelConfig& model) {
  return model.visit([](const auto& c) {
    if constexpr (std::is_same_v<std::decay_t<decltype(c)>, models::GptConfig>) {
      return Widths{c.num_heads, c.num_heads, c.hidden_dims, c.padded_vocab(), c.dims_per_head};
    } else {
      return Widths{c.num_heads, c.num_kv_heads, c.hidden_dims, c.padded_vocab(), c.dims_per_head};
    }
  });
}

}  // namespace

std::optional<std::string> tensor_split_error(const models::ModelConfig& model, int tensor) {
  if (tensor < 1) return fmt::format("tensor={}: the tensor axis needs at least 1 device", tensor);
  const Widths w = widths_of(model);
  const auto not_divisible = [&](const char* what, int value) -> std::optional<std::string> {
    if (value % tensor == 0) return std::nullopt;
    return fmt::format("{}={} is not divisible by the tensor axis's {} devices (each holds an equal share of the "
                       "heads, MLP units and vocabulary rows)",
                       what, value, tensor);
  };
  if (auto e = not_divisible("NUM_HEADS", w.heads)) return e;
  if (auto e = not_divisible("HIDDEN_DIMS", w.hidden)) return e;
  if (auto e = not_divisible("the padded vocabulary", w.padded_vocab)) return e;
  if (model.is_llama() && w.kv_heads % tensor != 0 && tensor % w.kv_heads != 0) {
    return fmt::format("NUM_KV_HEADS={} and the tensor axis's {} devices: one must divide the other (kv heads are "
                       "split, or each device holds one, replicated)",
                       w.kv_heads, tensor);
  }
  return std::nullopt;
}

TensorShard tensor_shard(const models::ModelConfig& model, int tensor) {
  if (const auto e = tensor_split_error(model, tensor)) throw ConfigError(*e);
  const Widths w = widths_of(model);
  TensorShard s;
  s.heads = w.heads / tensor;
  s.kv_heads = w.kv_heads % tensor == 0 ? w.kv_heads / tensor : 1;
  s.hidden = w.hidden / tensor;
  s.padded_vocab = w.padded_vocab / tensor;
  s.attention_dims = s.heads * w.dims_per_head;
  s.qkv_rows = (s.heads + 2 * s.kv_heads) * w.dims_per_head;
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
  const TensorShard s = tensor_shard(model, tensor);
  const auto& family_cuts = cuts(model.is_gpt());
  std::vector<models::TensorDef> defs = model.tensor_defs();
  for (models::TensorDef& d : defs) {
    const auto it = family_cuts.find(suffix_of(d));
    switch (it == family_cuts.end() ? Cut::kWhole : it->second) {
      case Cut::kWhole: break;
      case Cut::kQkvRows: d.shape[0] = s.qkv_rows; break;
      case Cut::kAttentionColumns: d.shape[1] = s.attention_dims; break;
      case Cut::kHiddenRows: d.shape[0] = s.hidden; break;
      case Cut::kGateUpRows: d.shape[0] = 2 * static_cast<std::int64_t>(s.hidden); break;
      case Cut::kHiddenColumns: d.shape[1] = s.hidden; break;
      case Cut::kVocabRows: d.shape[0] = s.padded_vocab; break;
    }
  }
  return defs;
}

}  // namespace paxocl::plan
