#include "plan/activation_memory.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include <cstdint>
#include "models/attention_workspace.h"
#include "plan/tensor_parallel.h"

namespace paxocl::plan {

namespace {

using models::BlockSite;

// Appends buffers under `prefix`, sized in elements of the right type: `copies` of each (one per
// block of a kind, or 1 outside the blocks), or one where the blocks share it.
class Inventory {
 public:
  Inventory(std::vector<BufferSize>& out, device::DType act, std::size_t copies, std::string prefix,
            models::SavedSites saved = {})
      : out_(out), act_(act), blocks_(copies), copies_(copies), prefix_(std::move(prefix)), saved_(saved) {}
  void act(const std::string& name, std::size_t elements) { add(name, elements * device::dtype_size(act_)); }
  void f32(const std::string& name, std::size_t elements) { add(name, elements * sizeof(float)); }
  void i32(const std::string& name, std::size_t elements) { add(name, elements * sizeof(std::int32_t)); }

  // The saved buffers of a site: per block if the policy keeps it, else shared (BufferSource::saved).
  Inventory site(BlockSite s) const { return sharing(!saved_.has(s)); }
  // Transient buffers: shared by the blocks (BufferSource::transient).
  Inventory transient() const { return sharing(true); }
  // Buffers each block owns whatever the policy.
  Inventory own() const { return sharing(false); }

 private:
  Inventory sharing(bool shared) const {
    Inventory other = *this;
    other.copies_ = shared ? std::min<std::size_t>(blocks_, 1) : blocks_;
    return other;
  }
  void add(const std::string& name, std::size_t bytes) { out_.get().push_back({prefix_ + name, bytes, copies_}); }
  std::reference_wrapper<std::vector<BufferSize>> out_;
  device::DType act_;
  std::size_t blocks_, copies_;
  std::string prefix_;
  models::SavedSites saved_;
};

struct Rows {
  std::size_t all;      // N = B x T
  std::size_t outside;  // the rows of norms and residual sums: N, or N / t under sequence parallelism
};

// `site`: the norm's site's inventory (the same for the transient gradient).
void norm(Inventory site, const std::string& name, Rows rows, std::size_t C, bool layer_norm) {
  site.act(name + ".y", rows.outside * C);
  if (layer_norm) site.f32(name + ".mean", rows.outside);
  site.f32(name + ".rstd", rows.outside);
  site.transient().act(name + ".dx", rows.outside * C);
}

void linear(Inventory site, const std::string& name, std::size_t N, std::size_t in, std::size_t out, bool gelu) {
  Inventory transient = site.transient();
  site.act(name + ".z", N * out);
  transient.act(name + ".dx", N * in);
  if (gelu) {
    site.act(name + ".gelu", N * out);
    transient.act(name + ".dz", N * out);
  }
}

void attention(Inventory site, const std::string& name, const ActivationShape& s, std::size_t heads,
               std::size_t kv_heads, std::size_t hs) {
  const std::size_t B = s.sequences, T = s.seq_len;
  const models::AttentionWorkspace w =
      models::attention_workspace(s.act, kv_heads, heads / kv_heads, T, B, s.attention_workspace_bytes);
  Inventory transient = site.transient();
  site.f32(name + ".lse", B * heads * T);
  site.act(name + ".out", B * T * heads * hs);
  transient.f32(name + ".delta", B * heads * T);
  transient.act(name + ".dqkv", B * T * (heads + 2 * kv_heads) * hs);
  if (s.flash_attention && s.flash_attention(hs)) return;  // tiles in local memory: no score workspace
  transient.f32(name + ".scores", w.floats() * T);
  transient.f32(name + ".dscores", w.floats() * T);
  if (w.dkv_sums) transient.f32(name + ".dkv_sums", T * 2 * kv_heads * hs);
}

// models/layers/ssm.h: output and input gradient, K and dK, the frozen table W z^l, the recurrence's
// coefficients and the decoding state (allocated with the layer).
void ssm(Inventory site, const std::string& name, const ActivationShape& s, std::size_t C, std::size_t N) {
  const std::size_t B = s.sequences, T = s.seq_len;
  site.f32(name + ".K", T * C);
  site.transient().f32(name + ".dK", T * C);
  site.own().f32(name + ".state", 2 * B * N * C);
  site.act(name + ".y", B * T * C);
  site.transient().act(name + ".du", B * T * C);
  site.own().f32(name + ".powers", 2 * T * N);
  site.own().f32(name + ".steps", 4 * N);
}

void sequence_parallel(Inventory& inv, Rows rows, std::size_t C) {
  inv.act("sequence.gathered_input", rows.all * C);
  inv.act("sequence.gathered_gradient", rows.all * C);
  inv.act("sequence.stream_input", rows.outside * C);
  inv.act("sequence.delta", rows.outside * C);
  inv.f32("sequence.packed_gradients", 4 * C);
  inv.f32("sequence.earlier_gradients", 4 * C);
}

void embedding(Inventory& inv, std::size_t N, std::size_t C, bool position_table) {
  inv.act("embedding.zero_row", position_table ? 1 : C);
  inv.i32("embedding.ids", N);
  inv.i32("embedding.tokens", N);
  inv.i32("embedding.starts", N + 1);
  inv.i32("embedding.positions", N);
  inv.act("embedding.x", N * C);
}

void lm_head(Inventory& inv, const ActivationShape& s, std::size_t N, std::size_t C, std::size_t vocab_rows) {
  inv.act("lm_head.logits", N * vocab_rows);
  inv.f32("lm_head.losses", N);
  inv.f32("lm_head.correct", N);
  inv.f32("lm_head.weights", N);
  inv.act("lm_head.dy", N * C);
  inv.i32("lm_head.targets", N);
  // Vocabulary-parallel cross-entropy: every rank's (max, sum of exponentials, target logit) per row
  // (one float without a tensor axis).
  inv.f32("lm_head.partials", s.tensor > 1 ? static_cast<std::size_t>(s.tensor) * N * 3 : 1);
}

}  // namespace

std::vector<BufferSize> activation_buffers(const models::ModelConfig& model, const ActivationShape& s) {
  const TensorShard shard = tensor_shard(model, s.tensor);
  const std::size_t N = s.sequences * s.seq_len;
  const std::size_t t = static_cast<std::size_t>(s.tensor);
  const Rows rows{N, s.sequence_parallel ? (N + t - 1) / t : N};
  const std::size_t heads = static_cast<std::size_t>(shard.heads), kv = static_cast<std::size_t>(shard.kv_heads),
                    F = static_cast<std::size_t>(shard.hidden), D = static_cast<std::size_t>(shard.attention_dims),
                    W = static_cast<std::size_t>(shard.qkv_rows), Vp = static_cast<std::size_t>(shard.padded_vocab);
  // A stage axis of 1 is the whole model (BlockModel's rule).
  const models::StageSpan stage = s.stage.stages > 1 ? s.stage : models::stage_span(model.num_blocks(), 1, 0);
  std::vector<BufferSize> out;
  Inventory once(out, s.act, 1, "");
  Inventory block(out, s.act, static_cast<std::size_t>(stage.blocks()), "h*.", s.saved);
  model.visit([&](const auto& c) {
    const std::size_t C = static_cast<std::size_t>(c.model_dims), hs = static_cast<std::size_t>(c.dims_per_head);
    if (s.sequence_parallel) sequence_parallel(once, rows, C);
    if (!stage.first_stage()) once.act("stage.input", N * C);
    if (!stage.last_stage()) once.act("stage.output_gradient", N * C);
    if constexpr (std::is_same_v<std::decay_t<decltype(c)>, models::GptConfig>) {
      // The position table lives on tensor rank 0; the other ranks' embedding keeps a zero row of C
      // instead, so they hold the most.
      if (stage.first_stage()) embedding(once, N, C, t == 1);
      // A hybrid's blocks (BLOCK_KINDS): the SSM's buffers in some, attention's in the others.
      std::size_t ssm_blocks = 0;
      for (int l = stage.first; l < stage.end; ++l) ssm_blocks += c.block_kind(l) == models::BlockKind::kSsm ? 1 : 0;
      const auto blocks = static_cast<std::size_t>(stage.blocks());
      Inventory attention_block(out, s.act, blocks - ssm_blocks, "h*.", s.saved);
      Inventory ssm_block(out, s.act, ssm_blocks, "h*.", s.saved);
      norm(block.site(BlockSite::kNorm1), "ln1", rows, C, true);
      if (ssm_blocks < blocks) {
        linear(attention_block.site(BlockSite::kQkvProj), "qkv", N, C, W, false);
        attention(attention_block.site(BlockSite::kContext), "attn", s, heads, heads, hs);
        linear(attention_block.site(BlockSite::kOutProj), "proj", N, D, C, false);
      }
      if (ssm_blocks > 0) ssm(ssm_block.site(BlockSite::kSsm), "ssm", s, C, static_cast<std::size_t>(c.ssm.state_size));
      norm(block.site(BlockSite::kNorm2), "ln2", rows, C, true);
      linear(block.site(BlockSite::kFfn1), "fc", N, C, F, true);
      linear(block.site(BlockSite::kFfn2), "fcproj", N, F, C, false);
      block.site(BlockSite::kNorm2).act("x2", rows.outside * C);
      block.own().act("y", rows.outside * C);
      if (stage.last_stage()) norm(once, "lnf", rows, C, true);
    } else {
      once.f32("rope.cos", s.seq_len * hs / 2);
      once.f32("rope.sin", s.seq_len * hs / 2);
      if (stage.first_stage()) embedding(once, N, C, false);
      norm(block.site(BlockSite::kNorm1), "attn_norm", rows, C, false);
      linear(block.site(BlockSite::kQkvProj), "qkv", N, C, W, false);
      // kv heads replicated over the tensor axis: each block sums their weight gradient's rows
      // through a (2 Hkv hs, C) scratch (models/layers/self_attention.h).
      if (s.tensor > c.num_kv_heads) {
        block.transient().f32("kv_replicas", 2 * static_cast<std::size_t>(c.num_kv_heads) * hs * C);
      }
      attention(block.site(BlockSite::kContext), "attn", s, heads, kv, hs);
      linear(block.site(BlockSite::kOutProj), "proj", N, D, C, false);
      norm(block.site(BlockSite::kNorm2), "mlp_norm", rows, C, false);
      linear(block.site(BlockSite::kFfn1), "mlp.gate_up", N, C, 2 * F, false);
      linear(block.site(BlockSite::kFfn2), "mlp.down", N, F, C, false);
      block.site(BlockSite::kFfn1).act("mlp.h", N * F);
      block.transient().act("mlp.dgu", N * 2 * F);
      block.site(BlockSite::kNorm2).act("x2", rows.outside * C);
      block.own().act("y", rows.outside * C);
      if (stage.last_stage()) norm(once, "norm", rows, C, false);
    }
    if (stage.last_stage()) lm_head(once, s, N, C, Vp);
  });
  return out;
}

std::size_t total_bytes(const std::vector<BufferSize>& buffers) {
  std::size_t sum = 0;
  for (const BufferSize& b : buffers) sum += b.total();
  return sum;
}

BufferSize largest(const std::vector<BufferSize>& buffers) {
  BufferSize best;
  for (const BufferSize& b : buffers) {
    if (b.bytes > best.bytes) best = b;
  }
  return best;
}

}  // namespace paxocl::plan
