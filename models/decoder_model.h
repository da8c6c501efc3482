// DecoderModel: the pass every decoder-only family runs, over its own layer types.
//   ids (B, T) -> Embedding -> NUM_LAYERS x Block -> FinalNorm -> LmHead (logits = y W^T with
//   W the embedding table (GPT, tied) or its own head (LLaMA), weighted mean softmax cross-entropy)
// A family derives, builds these layers in its constructor (on BlockModel::param views) and
// implements nothing else: the phases below are the Model interface's (model.h).
// Tensor parallelism (pass.ctx.tensor): the vocabulary-parallel embedding's output and the LM
// head's input gradient are partial sums, summed here; the blocks and the head sum their own.
// Sequence parallelism (pass.ctx.sequence, layers/sequence_parallel.h): those sums are
// reduce-scattered into the device's rows instead, which the blocks and the final norm run on;
// the final norm's output is all-gathered for the head, and the blocks' input gradient for the
// embedding's backward. pass.x is then the device's rows (N/t, C).
// Pipeline stages (ModelOptions::stage): a stage without the embedding starts its pass from
// stage_input(), one without the head starts its backward from stage_output_gradient() and ends
// it with pass.x, the gradient of its input; the blocks are the stage's, numbered from 0.
// Rematerialization (models/checkpoint_policy.h): the blocks share the forward results the policy
// does not keep; a block's backward first recomputes them unless they are still its own (the last
// block run forward).
#pragma once

#include <memory>
#include <stdexcept>
#include <vector>

#include "models/block_model.h"
#include "models/layers/embedding.h"
#include "models/layers/lm_head.h"
#include "models/layers/sequence_parallel.h"

namespace paxocl::models {

template <typename Block, typename FinalNorm>
class DecoderModel : public BlockModel {
 public:
  Pass begin_pass(const inputs::Batch& batch, bool gradients) override {
    Pass pass{start_pass(batch, gradients), &batch, nullptr};
    shared_state_of_ = -1;
    recomputed_ = 0;
    LayerContext& ctx = pass.ctx;
    if (!embedding_) {  // a later pipeline stage: the previous stage's output was received here
      pass.x = &stage_input();
      return pass;
    }
    ActBuffer& x = embedding_->forward(ctx, batch.ids);
    if (ctx.sequence) {
      ctx.tensor->reduce_scatter(x, ctx.sequence->stream_input, ctx.stream_rows() * dims());
      pass.x = &ctx.sequence->stream_input;
      return pass;
    }
    if (ctx.tensor) ctx.tensor->sum(x, ctx.rows() * dims());
    pass.x = &x;
    return pass;
  }
  void forward_block(Pass& pass, int block) override {
    prepare_block(block);
    pass.x = &blocks_.at(static_cast<std::size_t>(block)).forward(pass.ctx, *pass.x);
    shared_state_of_ = block;
  }
  LossStats forward_loss(Pass& pass) override {
    if (!head_) throw std::logic_error("forward_loss on a pipeline stage without the head");
    LayerContext& ctx = pass.ctx;
    const ActBuffer* y = &final_norm_->forward(ctx, *pass.x);
    if (ctx.sequence) {  // the head's input stays in the workspace until begin_backward's dW
      ctx.tensor->all_gather(*y, ctx.sequence->gathered_input, ctx.stream_rows() * dims());
      y = &ctx.sequence->gathered_input;
    }
    return head_->forward(ctx, *y, pass.batch->targets, pass.batch->weights, loss_scale(), pass.mean_over);
  }
  void begin_backward(Pass& pass) override {
    if (!head_) {  // an earlier pipeline stage: the next stage's input gradient was received here
      pass.x = &stage_output_gradient();
      return;
    }
    LayerContext& ctx = pass.ctx;
    ActBuffer& dy = head_->backward(ctx);
    if (ctx.sequence) {
      ctx.tensor->reduce_scatter(dy, ctx.sequence->delta, ctx.stream_rows() * dims());
      const std::vector<FloatBuffer> norm_gradients = final_norm_->parameter_gradients();
      ctx.sequence->begin_gradients(ctx, norm_gradients);  // only this pass's gradients are summed
      pass.x = &final_norm_->backward(ctx, ctx.sequence->delta);
      ctx.sequence->sum_gradients(ctx, norm_gradients);
      return;
    }
    if (ctx.tensor) ctx.tensor->sum(dy, ctx.rows() * dims());
    pass.x = &final_norm_->backward(ctx, dy);
  }
  void backward_block(Pass& pass, int block) override {
    prepare_block(block);  // under FSDP the slot may hold another block's weights by now
    Block& b = blocks_.at(static_cast<std::size_t>(block));
    if (rematerializes(options_.checkpoint_policy) && shared_state_of_ != block) {
      b.recompute(pass.ctx, saved_sites());
      shared_state_of_ = block;
      ++recomputed_;
    }
    pass.x = &b.backward(pass.ctx, *pass.x);
  }
  void finish_backward(Pass& pass) override {
    if (!embedding_) return;  // pass.x: the gradient of the stage's input, for the previous stage
    LayerContext& ctx = pass.ctx;
    if (ctx.sequence) {
      ctx.tensor->all_gather(*pass.x, ctx.sequence->gathered_gradient, ctx.stream_rows() * dims());
      pass.x = &ctx.sequence->gathered_gradient;
    }
    embedding_->backward(ctx, *pass.x);
  }

  int recomputed_blocks() const override { return recomputed_; }
  const PositionScores& position_scores() const override {
    if (!head_) throw std::logic_error("position_scores on a pipeline stage without the head");
    return head_->position_scores();
  }

  void begin_decode(std::size_t batch) override {
    decode_batch_ = batch;
    decoded_ = 0;
  }
  std::vector<float> decode(const std::vector<int>& tokens, std::size_t n) override {
    LayerContext ctx = start_decode(tokens, decode_batch_, n, decoded_);
    shared_state_of_ = -1;
    const ActBuffer* x = &embedding_->forward(ctx, tokens, decoded_);
    for (Block& block : blocks_) x = &block.forward(ctx, *x, decoded_);
    decoded_ += n;
    return head_->logits(ctx, final_norm_->forward(ctx, *x), n - 1, n, decode_batch_);
  }
  std::vector<float> last_logits(const std::vector<int>& ids, std::size_t batch) override {
    const std::size_t T = batch == 0 ? 0 : ids.size() / batch;
    LayerContext ctx = start_decode(ids, batch, T, 0);
    shared_state_of_ = -1;
    const ActBuffer* x = &embedding_->forward(ctx, ids);
    for (Block& block : blocks_) x = &block.forward(ctx, *x);
    return head_->logits(ctx, final_norm_->forward(ctx, *x), T - 1, T, batch);
  }

 protected:
  DecoderModel(kernels::DeviceRuntime& runtime, ModelConfig config, ModelOptions options, std::size_t dims)
      : BlockModel(runtime, std::move(config), options), dims_(dims) {}
  std::size_t dims() const { return dims_; }  // C: the width of the residual stream

  std::unique_ptr<Embedding> embedding_;
  std::vector<Block> blocks_;
  std::unique_ptr<FinalNorm> final_norm_;
  std::unique_ptr<LmHead> head_;

 private:
  std::size_t dims_;
  std::size_t decode_batch_ = 0, decoded_ = 0;
  int shared_state_of_ = -1;  // the block whose forward results the shared buffers hold (-1: none)
  int recomputed_ = 0;        // blocks recomputed in this pass
};

}  // namespace paxocl::models
