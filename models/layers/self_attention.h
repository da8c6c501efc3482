// SelfAttention: x (N, C) -> fused QKV projection (N, (H + 2 Hkv) hs) (GPT: with bias, Hkv = H)
// -> rotary position embeddings on its q and k heads (LLaMA; none for GPT, whose positions are
// learned embeddings) -> causal attention (N, H hs) -> output projection (N, C).
// The rotary layer may be shared by every layer of a model (it holds only its tables).
// Tensor parallelism (models/tensor_split.h): H, Hkv are this device's heads; the output is a
// partial sum and the input gradient too (the block sums them). With kv heads replicated (LLaMA,
// tensor axis > Hkv), the kv rows of the QKV weight gradient are partial over the devices sharing
// the head: `KvReplicas` sums them after the backward.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "models/layers/causal_attention.h"
#include "models/layers/linear.h"
#include "models/layers/rotary_embedding.h"

namespace paxocl::models {

// The kv rows of one device's QKV weight gradient (rows [q_rows, q_rows + 2 hs) of (q_rows + 2 hs, C):
// one kv head's k then v) and where that head sits among all Hkv.
struct KvReplicas {
  FloatBuffer qkv_grad;     // the device's QKV weight gradient
  std::size_t q_rows = 0;   // rows before the k rows
  std::size_t head_rows = 0;  // hs
  std::size_t dims = 0;     // C
  int head = 0, num_heads = 1;
  FloatBuffer scratch;      // (2 Hkv hs, C): every device's kv rows at their head, summed over the group
};

class SelfAttention {
 public:
  SelfAttention(Linear qkv, CausalAttention core, Linear proj, std::shared_ptr<RotaryEmbedding> rope = nullptr,
                std::optional<KvReplicas> kv_replicas = std::nullopt)
      : qkv_(std::move(qkv)),
        core_(std::move(core)),
        proj_(std::move(proj)),
        rope_(std::move(rope)),
        kv_replicas_(std::move(kv_replicas)) {}

  // decode_position: decoding with the key/value cache, the rows at positions from there on.
  ActBuffer& forward(LayerContext& ctx, const ActBuffer& x, std::optional<std::size_t> decode_position = {}) {
    ActBuffer& qkv = qkv_.forward(ctx, x);
    if (rope_) rope_->forward(ctx, qkv, decode_position.value_or(0));
    return proj_.forward(ctx, decode_position ? core_.decode(ctx, qkv, *decode_position) : core_.forward(ctx, qkv));
  }
  // Rematerialization (models/checkpoint_policy.h): recomputes from x, by the forward's kernels, the
  // parts of the forward state `saved` lacks (qkv_proj, context); with `projection` also the output
  // projection, returned as forward returns it (a partial sum under tensor parallelism); else null.
  ActBuffer* recompute(LayerContext& ctx, const ActBuffer& x, SavedSites saved, bool projection) {
    if (recompute_reads_input(saved)) {
      ActBuffer& qkv = qkv_.forward(ctx, x);
      if (rope_) rope_->forward(ctx, qkv, 0);
    }
    if (!saved.has(BlockSite::kContext)) core_.forward(ctx, qkv_.output());
    return projection ? &proj_.forward(ctx, core_.output()) : nullptr;
  }
  static bool recompute_reads_input(SavedSites saved) { return !saved.has(BlockSite::kQkvProj); }
  ActBuffer& output() { return proj_.output(); }  // the last forward's (summed in place by the block)
  // Under tensor parallelism the output and the input gradient are partial sums (the block sums them).
  static constexpr bool tensor_partial() { return true; }
  // after_dx: as Linear::backward's, for the input gradient.
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {}) {
    ActBuffer& dqkv = core_.backward(ctx, proj_.backward(ctx, dy));
    if (rope_) rope_->backward(ctx, dqkv);
    ActBuffer& dx = qkv_.backward(ctx, dqkv, after_dx);
    if (kv_replicas_) sum_kv_replicas(ctx, *kv_replicas_);
    return dx;
  }

 private:
  // Every device writes its head's k and v gradient rows into the zeroed (2 Hkv hs, C) scratch at
  // that head; the sum over the tensor group adds the replicas of each head; each takes its rows back.
  static void sum_kv_replicas(LayerContext& ctx, KvReplicas& kv) {
    device::Queue& q = ctx.device.queue();
    const std::size_t head = kv.head_rows * kv.dims, kv_part = static_cast<std::size_t>(kv.num_heads) * head;
    const std::size_t at = static_cast<std::size_t>(kv.head) * head, own = kv.q_rows * kv.dims;
    q.zero(kv.scratch.get(), kv.scratch.bytes());
    q.copy(kv.qkv_grad, own, kv.scratch, at, head);                     // k rows
    q.copy(kv.qkv_grad, own + head, kv.scratch, kv_part + at, head);    // v rows
    ctx.tensor->sum(kv.scratch, 2 * kv_part);
    q.copy(kv.scratch, at, kv.qkv_grad, own, head);
    q.copy(kv.scratch, kv_part + at, kv.qkv_grad, own + head, head);
  }

  Linear qkv_;
  CausalAttention core_;
  Linear proj_;
  std::shared_ptr<RotaryEmbedding> rope_;
  std::optional<KvReplicas> kv_replicas_;
};

}  // namespace paxocl::models
