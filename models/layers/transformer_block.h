// TransformerBlock: Pax's pre-norm decoder block, for any norm, attention and MLP layers.
//   x2 = x + Attention(Norm1(x));   y = x2 + Mlp(Norm2(x2))        x, x2, y: (N, C)
// backward(dy) returns dx (N, C); the residual branches add their gradients. x, x2, y and the
// gradients are in the activation dtype `act`.
// Sequence parallelism (ctx.sequence, layers/sequence_parallel.h): x, x2, y, their gradients and
// the norms hold this device's rows (N/t, C) (`max_rows` is then the shard's); the norms' outputs
// are all-gathered into the shared workspace before attention and the MLP, whose partial outputs
// are reduce-scattered back into rows. The backward mirrors it and gathers the norms' outputs again.
// GptBlock: LayerNorm, a TokenMixer (SelfAttention with fused QKV and bias, or the S4D SSM:
// BLOCK_KINDS), GELU Mlp. LlamaBlock: RMSNorm, SelfAttention with rotary embeddings and grouped
// key/value heads (no biases), SwiGLU MLP.
// Norm must offer forward, forward_residual(ctx, x, delta, sum) and backward(ctx, dy, dresidual)
// (layer_norm.h, rms_norm.h); Attention and Mlp forward(ctx, x) and backward(ctx, dy), and
// Attention tensor_partial(): whether its results are partial sums over a tensor group (the SSM's are whole).
// Rematerialization (models/checkpoint_policy.h): a block whose forward results live in buffers
// shared with the other blocks (layers/buffer_source.h) has them recomputed by recompute(), from its
// input (the previous block's output, which every policy keeps), just before its backward.
#pragma once

#include <functional>
#include <optional>

#include "models/layers/layer_norm.h"
#include "models/layers/mlp.h"
#include "models/layers/rms_norm.h"
#include "models/layers/self_attention.h"
#include "models/layers/sequence_parallel.h"
#include "models/layers/swiglu_mlp.h"
#include "models/layers/token_mixer.h"

namespace paxocl::models {

template <typename Norm, typename Attention, typename MlpLayer>
class TransformerBlock {
 public:
  // `buffers`: the block's (any site); x2 stores at the norm2 site, y at the layer output's.
  TransformerBlock(const BufferSource& buffers, device::DType act, Norm norm1, Attention attention, Norm norm2,
                   MlpLayer mlp, std::size_t dims, std::size_t max_rows, const std::string& name)
      : norm1_(std::move(norm1)),
        attention_(std::move(attention)),
        norm2_(std::move(norm2)),
        mlp_(std::move(mlp)),
        dims_(dims),
        x2_(buffers.at(BlockSite::kNorm2).saved(act, max_rows * dims, name + ".x2")),
        y_(buffers.at(BlockSite::kLayerOut).saved(act, max_rows * dims, name + ".y")) {}

  // decode_position: decoding with the attention's key/value cache (SelfAttention::forward).
  // Tensor parallelism (ctx.tensor): the attention's and the MLP's outputs are partial sums over
  // the group (row-parallel projections), summed before the residual adds.
  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& x, std::optional<std::size_t> decode_position = {}) {
    input_ = &x;
    if (ctx.sequence) return forward_sequence_parallel(ctx, x);
    const std::size_t n = ctx.rows() * dims_;
    ActBuffer& a = attention_.forward(ctx, norm1_.forward(ctx, x), decode_position);
    if (ctx.tensor && attention_.tensor_partial()) ctx.tensor->sum(a, n);
    // x2 = x + attention(...) is formed inside norm2 (residual fusion).
    const ActBuffer& m = norm2_.forward_residual(ctx, x, a, x2_);
    ActBuffer& h = mlp_.forward(ctx, m);
    if (ctx.tensor) ctx.tensor->sum(h, n);
    ctx.kernels.residual.add(y_, x2_, h, n);
    return y_;
  }

  // Rematerialization: recomputes, from the last forward's input, what the backward reads and
  // `saved` lacks, by the forward's kernels in the forward's order (the same values, bit for bit),
  // with the forward's collectives. The MLP's output and the block's are never recomputed: the
  // backward reads neither. out_proj is recomputed only for the residual sum x2 (norm2's site).
  void recompute(LayerContext& ctx, SavedSites saved) {
    if (ctx.sequence) return recompute_sequence_parallel(ctx, saved);
    const ActBuffer& x = *input_;
    if (!saved.has(BlockSite::kNorm1)) norm1_.forward(ctx, x);
    const bool residual = !saved.has(BlockSite::kNorm2);
    ActBuffer* a = attention_.recompute(ctx, norm1_.output(), saved, residual && !saved.has(BlockSite::kOutProj));
    if (residual) {
      if (a != nullptr && ctx.tensor && attention_.tensor_partial()) ctx.tensor->sum(*a, ctx.rows() * dims_);
      norm2_.forward_residual(ctx, x, a != nullptr ? *a : attention_.output(), x2_);
    }
    if (!saved.has(BlockSite::kFfn1)) mlp_.hidden(ctx, norm2_.output());
  }

  // Tensor parallelism: the input gradients of the column-parallel projections are partial sums;
  // their sums start as soon as each is computed and run while the weight gradient's GEMM does.
  const ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy) {
    if (ctx.sequence) return backward_sequence_parallel(ctx, dy);
    const std::size_t n = ctx.rows() * dims_;
    int ticket = -1;
    std::function<void(ActBuffer&)> start_sum;
    if (ctx.tensor) start_sum = [&](ActBuffer& dx) { ticket = ctx.tensor->start_sum(dx, n); };
    auto finish_sum = [&] {
      if (ctx.tensor) ctx.tensor->finish(ticket);
    };
    // dx2 = dy + norm2'(mlp'(dy));  dx = dx2 + norm1'(attention'(dx2)): the residual adds are fused
    // into the norms' backward kernels.
    const ActBuffer& dm = mlp_.backward(ctx, dy, start_sum);
    finish_sum();
    const ActBuffer& dx2 = norm2_.backward(ctx, dm, &dy);
    if (!attention_.tensor_partial()) return norm1_.backward(ctx, attention_.backward(ctx, dx2), &dx2);
    const ActBuffer& da = attention_.backward(ctx, dx2, start_sum);
    finish_sum();
    return norm1_.backward(ctx, da, &dx2);
  }

 private:
  // x (N/t, C) -> norm1 -> all-gather (N, C) -> attention -> partial (N, C) -> reduce-scatter ->
  // x2 = x + that (norm2's residual fusion) -> norm2 -> all-gather -> MLP -> reduce-scatter -> y = x2 + that.
  const ActBuffer& forward_sequence_parallel(LayerContext& ctx, const ActBuffer& x) {
    SequenceParallel& sp = *ctx.sequence;
    TensorGroup& group = *ctx.tensor;
    const std::size_t shard = ctx.stream_rows() * dims_;
    normed1_ = &norm1_.forward(ctx, x);
    group.all_gather(*normed1_, sp.gathered_input, shard);
    ActBuffer& a = attention_.forward(ctx, sp.gathered_input);
    if (attention_.tensor_partial()) {
      group.reduce_scatter(a, sp.delta, shard);
    } else {  // whole on every member: its own rows
      SequenceParallel::take_own_rows(ctx, a, sp.delta, shard);
    }
    normed2_ = &norm2_.forward_residual(ctx, x, sp.delta, x2_);
    group.all_gather(*normed2_, sp.gathered_input, shard);
    group.reduce_scatter(mlp_.forward(ctx, sp.gathered_input), sp.delta, shard);
    ctx.kernels.residual.add(y_, x2_, sp.delta, shard);
    return y_;
  }

  // recompute's, in the forward's layout. out_proj is never kept here (checkpoint_policy.h): its
  // partial sums were the reduce-scatter's workspace.
  void recompute_sequence_parallel(LayerContext& ctx, SavedSites saved) {
    SequenceParallel& sp = *ctx.sequence;
    TensorGroup& group = *ctx.tensor;
    const std::size_t shard = ctx.stream_rows() * dims_;
    const ActBuffer& x = *input_;
    if (!saved.has(BlockSite::kNorm1)) norm1_.forward(ctx, x);
    const bool residual = !saved.has(BlockSite::kNorm2);
    if (attention_.recompute_reads_input(saved)) group.all_gather(norm1_.output(), sp.gathered_input, shard);
    ActBuffer* a = attention_.recompute(ctx, sp.gathered_input, saved, residual);
    if (residual) {
      if (attention_.tensor_partial()) {
        group.reduce_scatter(*a, sp.delta, shard);
      } else {
        SequenceParallel::take_own_rows(ctx, *a, sp.delta, shard);
      }
      norm2_.forward_residual(ctx, x, sp.delta, x2_);
    }
    if (!saved.has(BlockSite::kFfn1)) {
      group.all_gather(norm2_.output(), sp.gathered_input, shard);
      mlp_.hidden(ctx, sp.gathered_input);
    }
  }

  // The gradient of a reduce-scattered partial sum is the all-gathered gradient of the shard; the
  // column-parallel layers' input gradients (partial sums) are reduce-scattered, each started as
  // soon as it is computed so that it runs while the weight gradient's GEMM does. The layers'
  // inputs were the shared workspace, so norm2's and norm1's outputs are gathered into it again,
  // each while the work before its use runs.
  const ActBuffer& backward_sequence_parallel(LayerContext& ctx, const ActBuffer& dy) {
    SequenceParallel& sp = *ctx.sequence;
    TensorGroup& group = *ctx.tensor;
    const std::size_t shard = ctx.stream_rows() * dims_;
    int scatter = -1;
    auto start_scatter = [&](ActBuffer& dx) { scatter = group.start_reduce_scatter(dx, sp.delta, shard); };
    std::vector<FloatBuffer> norm_gradients = norm1_.parameter_gradients();
    for (FloatBuffer& g : norm2_.parameter_gradients()) norm_gradients.push_back(std::move(g));
    sp.begin_gradients(ctx, norm_gradients);  // earlier passes' sums aside: only this pass's are summed
    const int mlp_input = group.start_all_gather(*normed2_, sp.gathered_input, shard);
    group.all_gather(dy, sp.gathered_gradient, shard);
    group.finish(mlp_input);
    mlp_.backward(ctx, sp.gathered_gradient, start_scatter);
    const int attention_input = group.start_all_gather(*normed1_, sp.gathered_input, shard);
    group.finish(scatter);
    const ActBuffer& dx2 = norm2_.backward(ctx, sp.delta, &dy);
    group.all_gather(dx2, sp.gathered_gradient, shard);
    group.finish(attention_input);
    if (attention_.tensor_partial()) {
      attention_.backward(ctx, sp.gathered_gradient, start_scatter);
      group.finish(scatter);
    } else {
      SequenceParallel::take_own_rows(ctx, attention_.backward(ctx, sp.gathered_gradient), sp.delta, shard);
    }
    const ActBuffer& dx = norm1_.backward(ctx, sp.delta, &dx2);
    sp.sum_gradients(ctx, norm_gradients);
    return dx;
  }

  Norm norm1_;
  Attention attention_;
  Norm norm2_;
  MlpLayer mlp_;
  std::size_t dims_;
  ActBuffer x2_, y_;
  const ActBuffer* input_ = nullptr;    // the last forward's x (the previous block's output)
  const ActBuffer* normed1_ = nullptr;  // sequence parallelism: the norms' outputs (N/t, C), gathered
  const ActBuffer* normed2_ = nullptr;  // again in the backward
};

using GptBlock = TransformerBlock<LayerNorm, TokenMixer, Mlp>;
using LlamaBlock = TransformerBlock<RmsNorm, SelfAttention, SwigluMlp>;

}  // namespace paxocl::models
