// TokenMixer: the layer of a GPT block that mixes positions (BLOCK_KINDS, models/gpt_config.h):
// SelfAttention, or praxis's S4D state-space layer (Ssm), its SSMTransformer's replacement for it.
//   x (N, C) -> (N, C); backward dy (N, C) -> dx (N, C), as either layer.
// Tensor parallelism: attention splits by heads, so its output and input gradient are partial
// sums over the group (the block sums them); the SSM, per channel and cheap beside the MLP, runs
// whole on every rank with replicated parameters (models/tensor_split.h), so its results are
// already whole: tensor_partial() tells the block which.
#pragma once

#include <functional>
#include <optional>
#include <variant>

#include "models/layers/self_attention.h"
#include "models/layers/ssm.h"

namespace paxocl::models {

class TokenMixer {
 public:
  explicit TokenMixer(SelfAttention attention) : mixer_(std::move(attention)) {}
  explicit TokenMixer(Ssm ssm) : mixer_(std::move(ssm)) {}

  // decode_position: decoding (attention's key/value cache, the SSM's recurrent state).
  ActBuffer& forward(LayerContext& ctx, const ActBuffer& x, std::optional<std::size_t> decode_position = {}) {
    return std::visit([&](auto& m) -> ActBuffer& { return m.forward(ctx, x, decode_position); }, mixer_);
  }
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {}) {
    return std::visit([&](auto& m) -> ActBuffer& { return m.backward(ctx, dy, after_dx); }, mixer_);
  }
  // Rematerialization: SelfAttention::recompute's contract; the SSM, one site, runs its forward
  // unless `saved` keeps it, and returns its output when `projection` asks for the mixer's output.
  ActBuffer* recompute(LayerContext& ctx, const ActBuffer& x, SavedSites saved, bool projection) {
    if (auto* attention = std::get_if<SelfAttention>(&mixer_)) return attention->recompute(ctx, x, saved, projection);
    Ssm& ssm = std::get<Ssm>(mixer_);
    if (recompute_reads_input(saved)) ssm.forward(ctx, x);
    return projection ? &ssm.output() : nullptr;
  }
  bool recompute_reads_input(SavedSites saved) const {
    if (std::holds_alternative<Ssm>(mixer_)) return !saved.has(BlockSite::kSsm);
    return SelfAttention::recompute_reads_input(saved);
  }
  // The last forward's output (attention's summed in place under tensor parallelism).
  ActBuffer& output() {
    return std::visit([](auto& m) -> ActBuffer& { return m.output(); }, mixer_);
  }
  bool tensor_partial() const { return std::holds_alternative<SelfAttention>(mixer_); }

 private:
  std::variant<SelfAttention, Ssm> mixer_;
};

}  // namespace paxocl::models
