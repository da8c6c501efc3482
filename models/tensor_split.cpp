#include "models/tensor_split.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace {

void require_divides(int size, int value, const char* name, const char* what) {
  if (value % size != 0) {
    throw ConfigError(fmt::format("tensor axis {} does not divide {}={}: tensor parallelism splits the {} over the "
                                  "tensor axis; choose a tensor size that divides {}",
                                  size, name, value, what, value));
  }
}

// How one global tensor is cut: its sections of rows (a fused tensor's parts, e.g. q | k | v), each
// contributing [begin, begin + count) of its rows; or its columns; or whole (replicated or rank 0's).
struct Rule {
  enum class Kind { kReplicated, kRankZero, kRows, kColumns } kind = Kind::kReplicated;
  std::vector<TensorSlice::Rows> rows;  // kRows: global row blocks
  std::int64_t col_begin = 0, cols = 0;  // kColumns
};

Rule rows(std::vector<TensorSlice::Rows> blocks) { return Rule{Rule::Kind::kRows, std::move(blocks), 0, 0}; }
Rule columns(std::int64_t begin, std::int64_t count) { return Rule{Rule::Kind::kColumns, {}, begin, count}; }
const Rule kReplicated{Rule::Kind::kReplicated, {}, 0, 0};
const Rule kRankZero{Rule::Kind::kRankZero, {}, 0, 0};

// The rules by tensor name suffix (outside the blocks: the whole name).
using Rules = std::map<std::string, Rule, std::less<>>;

Rules gpt_rules(const GptConfig& c, const TensorLocalDims& d, int rank) {
  namespace n = tensor_names;
  const std::int64_t D = c.attention_dims(), Dl = std::int64_t{d.heads} * c.dims_per_head, Hl = d.hidden;
  const std::int64_t q0 = rank * Dl;
  const Rule qkv = rows({{q0, Dl}, {D + q0, Dl}, {2 * D + q0, Dl}});
  const Rule fc = rows({{rank * Hl, Hl}});
  return Rules{{std::string(n::kTokenEmbedding), rows({{d.vocab_begin, d.vocab_rows}})},
               {std::string(n::kPositionEmbedding), kRankZero},
               {std::string(n::kFinalNormScale), kReplicated},
               {std::string(n::kFinalNormBias), kReplicated},
               {std::string(n::kLn1Scale), kReplicated},
               {std::string(n::kLn1Bias), kReplicated},
               {std::string(n::kQkvWeight), qkv},
               {std::string(n::kQkvBias), qkv},
               {std::string(n::kAttnProjWeight), columns(q0, Dl)},
               {std::string(n::kAttnProjBias), kRankZero},
               {std::string(n::kLn2Scale), kReplicated},
               {std::string(n::kLn2Bias), kReplicated},
               {std::string(n::kFcWeight), fc},
               {std::string(n::kFcBias), fc},
               {std::string(n::kFcProjWeight), columns(rank * Hl, Hl)},
               {std::string(n::kFcProjBias), kRankZero},
               // The SSM is per channel and cheap beside the MLP: every rank runs it whole on the
               // replicated residual stream, so its output and input gradient need no sum.
               {std::string(n::kSsmCRe), kReplicated},
               {std::string(n::kSsmCIm), kReplicated},
               {std::string(n::kSsmD), kReplicated}};
}

Rules llama_rules(const LlamaConfig& c, const TensorLocalDims& d, int rank, int size) {
  namespace n = tensor_names::llama;
  const std::int64_t hs = c.dims_per_head, H = c.num_heads, Hkv = c.num_kv_heads, F = c.hidden_dims;
  const std::int64_t Ql = std::int64_t{d.heads} * hs, KVl = std::int64_t{d.kv_heads} * hs, Fl = d.hidden;
  const std::int64_t kv0 = std::int64_t{d.kv_head_begin} * hs;
  // A replicated kv head is owned by the first of the devices holding it.
  const bool kv_owned = !d.kv_replicated || rank % (size / c.num_kv_heads) == 0;
  const Rule vocab = rows({{d.vocab_begin, d.vocab_rows}});
  return Rules{{std::string(n::kTokenEmbedding), vocab},
               {std::string(n::kLmHead), vocab},
               {std::string(n::kFinalNormScale), kReplicated},
               {std::string(n::kAttnNormScale), kReplicated},
               {std::string(n::kQkvWeight),
                rows({{rank * Ql, Ql}, {H * hs + kv0, KVl, kv_owned}, {(H + Hkv) * hs + kv0, KVl, kv_owned}})},
               {std::string(n::kAttnProjWeight), columns(rank * Ql, Ql)},
               {std::string(n::kMlpNormScale), kReplicated},
               {std::string(n::kGateUpWeight), rows({{rank * Fl, Fl}, {F + rank * Fl, Fl}})},
               {std::string(n::kDownWeight), columns(rank * Fl, Fl)}};
}

// "h3.attn.qkv.w" -> "attn.qkv.w"; names outside the blocks stay whole.
std::string_view suffix_of(const TensorDef& def) {
  if (def.block < 0) return def.name;
  return std::string_view(def.name).substr(def.name.find('.') + 1);
}

std::int64_t rows_of(const std::vector<std::int64_t>& shape) { return shape.front(); }
std::int64_t cols_of(const std::vector<std::int64_t>& shape) { return shape.size() > 1 ? shape[1] : 1; }

}  // namespace

void validate_tensor_split(const ModelConfig& config, int size) {
  if (size < 1) throw ConfigError(fmt::format("tensor axis {}: must be at least 1", size));
  if (size == 1) return;
  config.visit([size](const auto& c) {
    using C = std::decay_t<decltype(c)>;
    require_divides(size, c.num_heads, "NUM_HEADS", "attention heads");
    require_divides(size, c.hidden_dims, "HIDDEN_DIMS", "MLP's hidden units");
    require_divides(size, c.padded_vocab(), "the padded vocabulary", "vocabulary rows of the embedding and LM head");
    if constexpr (std::is_same_v<C, LlamaConfig>) {
      if (c.num_kv_heads % size != 0 && size % c.num_kv_heads != 0) {
        throw ConfigError(fmt::format("tensor axis {} and NUM_KV_HEADS={}: one must divide the other (kv heads are "
                                      "split when the axis divides them, else each replicated on axis/NUM_KV_HEADS "
                                      "devices)", size, c.num_kv_heads));
      }
    }
  });
}

TensorLocalDims tensor_local_dims(const ModelConfig& config, TensorShard shard) {
  validate_tensor_split(config, shard.size);
  if (shard.rank < 0 || shard.rank >= shard.size) {
    throw std::logic_error(fmt::format("tensor rank {} outside [0, {})", shard.rank, shard.size));
  }
  const int t = shard.size, r = shard.rank;
  TensorLocalDims d;
  config.visit([&](const auto& c) {
    using C = std::decay_t<decltype(c)>;
    d.heads = c.num_heads / t;
    d.hidden = c.hidden_dims / t;
    d.vocab_rows = c.padded_vocab() / t;
    d.vocab_begin = r * d.vocab_rows;
    d.vocab_real = std::clamp(c.vocab_size - d.vocab_begin, 0, d.vocab_rows);
    d.rank0_tensors = r == 0;
    if constexpr (std::is_same_v<C, LlamaConfig>) {
      d.kv_replicated = c.num_kv_heads % t != 0;
      d.kv_heads = d.kv_replicated ? 1 : c.num_kv_heads / t;
      d.kv_head_begin = d.kv_replicated ? r / (t / c.num_kv_heads) : r * d.kv_heads;
    } else {
      d.kv_heads = d.heads;
      d.kv_head_begin = r * d.heads;
    }
  });
  return d;
}

std::vector<TensorSlice> tensor_slices(const ModelConfig& config, TensorShard shard) {
  const TensorLocalDims dims = tensor_local_dims(config, shard);
  const Rules rules = config.visit([&](const auto& c) {
    using C = std::decay_t<decltype(c)>;
    if constexpr (std::is_same_v<C, LlamaConfig>) {
      return llama_rules(c, dims, shard.rank, shard.size);
    } else {
      return gpt_rules(c, dims, shard.rank);
    }
  });
  std::vector<TensorSlice> out;
  for (const TensorDef& def : config.tensor_defs()) {
    const auto it = rules.find(suffix_of(def));
    if (it == rules.end()) throw std::logic_error(fmt::format("tensor {} has no tensor-parallel rule", def.name));
    const Rule& rule = it->second;
    TensorSlice s{def.name, {{0, rows_of(def.shape), true}}, 0, cols_of(def.shape)};
    if (shard.split()) {
      switch (rule.kind) {
        case Rule::Kind::kReplicated: s.rows.front().owned = shard.rank == 0; break;
        case Rule::Kind::kRankZero:
          if (shard.rank != 0) continue;
          break;
        case Rule::Kind::kRows: s.rows = rule.rows; break;
        case Rule::Kind::kColumns:
          s.col_begin = rule.col_begin;
          s.cols = rule.cols;
          break;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<TensorDef> local_tensor_defs(const ModelConfig& config, TensorShard shard) {
  std::vector<TensorDef> global = config.tensor_defs(), out;
  const std::vector<TensorSlice> slices = tensor_slices(config, shard);
  auto g = global.begin();
  for (const TensorSlice& s : slices) {
    while (g->name != s.name) ++g;  // slices keep the global order
    TensorDef d = *g;
    std::int64_t rows = 0;
    for (const auto& r : s.rows) rows += r.count;
    d.shape.front() = rows;
    if (d.shape.size() > 1) d.shape[1] = s.cols;
    out.push_back(std::move(d));
  }
  return out;
}

TensorSplit::TensorSplit(const ModelConfig& config, TensorShard shard, const ParameterLayout& global,
                         const ParameterLayout& local)
    : global_(global), local_(local), slices_(tensor_slices(config, shard)) {}

// visit(global offset, local offset, floats, owned) for every contiguous run of a row.
template <typename Visit>
void TensorSplit::for_each_row(Visit&& visit) const {
  for (const TensorSlice& s : slices_) {
    const TensorSpec& g = global_.at(s.name);
    const TensorSpec& l = local_.at(s.name);
    const auto gcols = static_cast<std::size_t>(cols_of(g.shape));
    const auto cols = static_cast<std::size_t>(s.cols);
    std::size_t local_row = 0;
    for (const auto& block : s.rows) {
      for (std::int64_t r = 0; r < block.count; ++r, ++local_row) {
        visit(g.offset + static_cast<std::size_t>(block.begin + r) * gcols + static_cast<std::size_t>(s.col_begin),
              l.offset + local_row * cols, cols, block.owned);
      }
    }
  }
}

std::vector<float> TensorSplit::extract(std::span<const float> global) const {
  if (global.size() != global_.total()) {
    throw DataError(fmt::format("parameter image has {} floats; the model's layout needs {}", global.size(), global_.total()));
  }
  std::vector<float> local(local_.total(), 0.0f);
  for_each_row([&](std::size_t g, std::size_t l, std::size_t n, bool) {
    std::copy_n(global.begin() + static_cast<std::ptrdiff_t>(g), n, local.begin() + static_cast<std::ptrdiff_t>(l));
  });
  return local;
}

void TensorSplit::place(std::span<const float> local, std::span<float> global) const {
  for_each_row([&](std::size_t g, std::size_t l, std::size_t n, bool owned) {
    if (owned) std::copy_n(local.begin() + static_cast<std::ptrdiff_t>(l), n, global.begin() + static_cast<std::ptrdiff_t>(g));
  });
}

std::vector<ParameterLayout::Range> TensorSplit::replica_ranges() const {
  std::vector<ParameterLayout::Range> out;
  for_each_row([&](std::size_t, std::size_t l, std::size_t n, bool owned) {
    if (owned) return;
    if (!out.empty() && out.back().offset + out.back().count == l) {
      out.back().count += n;  // a tensor's consecutive rows: one range
    } else {
      out.push_back({l, n});
    }
  });
  return out;
}

}  // namespace paxocl::models
