#include "models/checkpoint_policy.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {

constexpr unsigned bit(BlockSite s) { return static_cast<unsigned>(s); }

struct PolicyEntry {
  CheckpointPolicy policy;
  const char* name;
  unsigned sites;  // besides kLayerOut, which every policy keeps
};

constexpr unsigned kDots = bit(BlockSite::kQkvProj) | bit(BlockSite::kContext) | bit(BlockSite::kOutProj) |
                           bit(BlockSite::kFfn1);

constexpr std::array<PolicyEntry, 12> kPolicies = {{
    {CheckpointPolicy::kSaveEverything, "SAVE_EVERYTHING", ~0u},
    {CheckpointPolicy::kSaveNothing, "SAVE_NOTHING", 0},
    {CheckpointPolicy::kSaveIterationInput, "SAVE_ITERATION_INPUT", 0},
    {CheckpointPolicy::kSaveTransformerLayerOutput, "SAVE_TRANSFORMER_LAYER_OUTPUT", 0},
    {CheckpointPolicy::kSaveDotOnly, "SAVE_DOT_ONLY", kDots},
    {CheckpointPolicy::kSaveDotExceptLogits, "SAVE_DOT_EXCEPT_LOGITS", kDots},
    {CheckpointPolicy::kSaveDotWithNoBatchDim, "SAVE_DOT_WITH_NO_BATCH_DIM",
     bit(BlockSite::kQkvProj) | bit(BlockSite::kOutProj) | bit(BlockSite::kFfn1)},
    {CheckpointPolicy::kSaveDotExceptLogitsFfn1, "SAVE_DOT_EXCEPT_LOGITS_FFN1",
     bit(BlockSite::kQkvProj) | bit(BlockSite::kContext) | bit(BlockSite::kOutProj)},
    {CheckpointPolicy::kSaveQkvOutProj, "SAVE_QKV_OUT_PROJ", bit(BlockSite::kQkvProj) | bit(BlockSite::kOutProj)},
    {CheckpointPolicy::kSaveOutProj, "SAVE_OUT_PROJ", bit(BlockSite::kOutProj)},
    {CheckpointPolicy::kSaveContext, "SAVE_CONTEXT", bit(BlockSite::kContext)},
    {CheckpointPolicy::kSaveContextAndOutProj, "SAVE_CONTEXT_AND_OUT_PROJ",
     bit(BlockSite::kContext) | bit(BlockSite::kOutProj)},
}};

const PolicyEntry& entry(CheckpointPolicy policy) {
  for (const PolicyEntry& e : kPolicies) {
    if (e.policy == policy) return e;
  }
  throw std::logic_error("checkpoint policy missing from the table");
}

}  // namespace

const std::vector<std::string>& checkpoint_policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PolicyEntry& e : kPolicies) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

CheckpointPolicy checkpoint_policy_from_name(std::string_view name) {
  for (const PolicyEntry& e : kPolicies) {
    if (name == e.name) return e.policy;
  }
  throw ConfigError(fmt::format("CHECKPOINT_POLICY={}: unknown; use one of {}", name,
                                fmt::join(checkpoint_policy_names(), ", ")));
}

std::string_view checkpoint_policy_name(CheckpointPolicy policy) { return entry(policy).name; }

double recompute_flops_per_token(const ModelConfig& model, SavedSites saved, int seq_len, int parts) {
  if (saved.everything()) return 0.0;
  const bool residual = !saved.has(BlockSite::kNorm2);
  return model.visit([&](const auto& c) {
    const double C = c.model_dims, D = static_cast<double>(c.num_heads) * c.dims_per_head, T = seq_len;
    double qkv = 2.0 * C * 3.0 * D, ffn1 = 2.0 * C * c.hidden_dims;  // GPT
    if constexpr (requires { c.num_kv_heads; }) {                     // LLaMA: grouped kv heads, SwiGLU's two halves
      qkv = 2.0 * C * (static_cast<double>(c.num_heads) + 2.0 * c.num_kv_heads) * c.dims_per_head;
      ffn1 = 2.0 * C * 2.0 * c.hidden_dims;
    }
    double attention_block = 0.0;  // an attention block's recompute
    if (!saved.has(BlockSite::kQkvProj)) attention_block += qkv;
    if (!saved.has(BlockSite::kContext)) attention_block += 4.0 * T * D;
    if (residual && !saved.has(BlockSite::kOutProj)) attention_block += 2.0 * D * C;
    const double mlp = saved.has(BlockSite::kFfn1) ? 0.0 : ffn1;
    double total = 0.0;
    for (int l = 0; l < c.num_layers; ++l) {
      if (!recomputes_block(l, c.num_layers, parts)) continue;
      bool attention = true;
      if constexpr (requires { c.block_kind(l); }) attention = c.block_kind(l) == BlockKind::kAttention;
      total += mlp + (attention ? attention_block : 0.0);
    }
    return total;
  });
}

SavedSites saved_sites(CheckpointPolicy policy, bool sequence_parallel) {
  unsigned sites = entry(policy).sites;
  if (sites == ~0u) return SavedSites{};
  sites |= bit(BlockSite::kLayerOut);
  if (sequence_parallel) sites &= ~bit(BlockSite::kOutProj);
  return SavedSites{sites};
}

}  // namespace paxocl::models
