// Model: what the step programs, the job and the optimizer need of a language model on one device,
// whatever its architecture. GptModel (gpt_model.h) is the first implementation; another family
// implements this and the scheduler, checkpoints and optimizer run it unchanged.
//   - its ParameterLayout: named tensors with shapes and decay flags, and units (one per block,
//     one outside the blocks) that FSDP gathers, shards and reduce-scatters;
//   - the float32 parameter and gradient buffers (the layout, or FSDP residency's unit slots);
//   - a pass in phases per block, so a scheduler can put collectives between blocks:
//       Pass p = begin_pass(batch, gradients);  // inputs and embeddings; with gradients: all zeroed
//       forward_block(p, 0 .. L-1);  LossStats s = forward_loss(p);
//       begin_backward(p);  backward_block(p, L-1 .. 0);  finish_backward(p);
//   - loss scaling, memory figures, and the weight files' tensors as a layout image.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "inputs/batch.h"
#include "kernels_cl/device_runtime.h"
#include "models/checkpoint_policy.h"
#include "models/layers/layer_context.h"
#include "models/layers/lm_head.h"  // LossStats
#include "models/parameter_layout.h"
#include "models/pipeline_schedule.h"
#include "models/tensor_split.h"
#include "models/weights_io.h"

namespace paxocl::models {

// A model's float32 parameters, their gradients and the step's copy in the activation dtype.
struct ParameterBuffers {
  FloatBuffer params, grads;
  ActBuffer compute;
};

// The size of one device's instance: the batches it can run and how its parameters are resident.
struct ModelOptions {
  std::size_t max_batch = 8;          // largest B a step may use
  std::size_t max_seq_len = 0;        // largest T; 0 = MAX_SEQ_LEN
  std::size_t attention_workspace_bytes = 64u << 20;  // bound on the (chunk, T, T) score workspace
  // 0: every parameter resident, as the flat layout. k > 0: FSDP residency: the buffers hold
  // unit(-1) then k block slots (each ParameterLayout::Unit-packed); block l lives in slot l % k.
  int resident_block_slots = 0;
  // Tensor parallelism (models/tensor_split.h): this instance holds rank's part of every tensor
  // and, during a pass, sums partial results through the TensorGroup given to set_tensor_group.
  TensorShard tensor{};
  // With tensor.split(): Megatron-LM's sequence parallelism (layers/sequence_parallel.h): the
  // residual stream and the norms on this rank's rows, N / tensor.size of them (t must divide every
  // batch's N = B*T: ConfigError at the pass otherwise).
  bool sequence_parallel = false;
  // CHECKPOINT_POLICY (models/checkpoint_policy.h): which forward results each block keeps for its
  // backward; the others are recomputed just before it.
  CheckpointPolicy checkpoint_policy = CheckpointPolicy::kSaveEverything;
  // Pipeline parallelism (models/pipeline_schedule.h, stage_split.h): this instance holds `stage`'s
  // blocks (numbered from 0 in its layout and its pass), the embedding only on the first stage and
  // the final norm and head only on the last (stages = 1: the whole model). A later stage's pass
  // starts from stage_input(); an earlier stage's backward from stage_output_gradient().
  StageSpan stage{};
  // A pipeline stage's further microbatches: this instance's own activations over another
  // instance's parameters, gradients and weight copy (Model::parameter_buffers()); it allocates none.
  std::optional<ParameterBuffers> shared_parameters{};
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ParameterLayout& layout() const = 0;
  virtual int vocab_size() const = 0;            // V: the real vocabulary (logits rows are this long)
  virtual std::size_t max_seq_len() const = 0;   // positions this instance was built for
  virtual std::size_t max_batch() const = 0;     // sequences a pass may hold (ModelOptions::max_batch)
  virtual int resident_block_slots() const = 0;  // 0: every parameter resident (decoding needs it)
  virtual kernels::DeviceRuntime& runtime() const = 0;
  // Tensor parallelism: the group every pass sums partial results through (ModelOptions::tensor);
  // it must outlive the passes. Without it a split model's pass throws.
  virtual void set_tensor_group(TensorGroup* group) = 0;

  // Parameter images need full residency (ConfigError otherwise); flat as ParameterLayout (under
  // tensor parallelism: the device's own, models/tensor_split.h).
  virtual void set_parameters(std::span<const float> flat) = 0;
  virtual std::vector<float> parameters() = 0;
  virtual std::vector<float> gradients() = 0;
  // A weight file's tensors as the whole model's flat layout image (any residency; under tensor
  // parallelism the job's layout, not this device's parts).
  virtual std::vector<float> flat_from_weights(const HostWeights& weights) const = 0;

  virtual FloatBuffer& parameter_buffer() = 0;
  virtual FloatBuffer& gradient_buffer() = 0;
  // Handles on the three buffers, for instances sharing them (ModelOptions::shared_parameters).
  virtual ParameterBuffers parameter_buffers() const = 0;
  // Pipeline stages: where a later stage's pass reads its input (B*T, C) (written before
  // begin_pass), and where an earlier stage's backward reads the gradient of its output (written
  // before begin_backward); pass.x after the last forward_block is the output to send on, and after
  // finish_backward the gradient of the input. logic_error on the stage that has no such buffer.
  virtual ActBuffer& stage_input() = 0;
  virtual ActBuffer& stage_output_gradient() = 0;
  // FSDP residency: the device memory of unit(block) (block -1: the unit outside the blocks).
  virtual FloatBuffer unit_parameters(int block) const = 0;
  virtual FloatBuffer unit_gradients(int block) const = 0;

  struct Pass {
    LayerContext ctx;
    const inputs::Batch* batch;
    const ActBuffer* x;  // (B*T, C): the activation (forward) or its gradient (backward) between phases
    // Gradient accumulation: the weight sum of the whole batch whose mean loss the gradients are of,
    // when this pass runs one of its sub-batches (0: this pass's own batch).
    double mean_over = 0;
  };
  virtual Pass begin_pass(const inputs::Batch& batch, bool gradients) = 0;
  virtual void forward_block(Pass& pass, int block) = 0;
  virtual LossStats forward_loss(Pass& pass) = 0;
  virtual void begin_backward(Pass& pass) = 0;
  virtual void backward_block(Pass& pass, int block) = 0;
  virtual void finish_backward(Pass& pass) = 0;

  // The last forward_loss's per-position losses and greedy flags (LmHead::position_scores; under
  // tensor parallelism every rank holds the whole rows').
  virtual const PositionScores& position_scores() const = 0;

  // Loss scaling (float16, models/loss_scaler.h): the backward produces the gradients of
  // loss_scale x the mean loss; the optimizer divides it out.
  virtual void set_loss_scale(float scale) = 0;
  // Device memory: what the layers allocated for activations and workspaces, and the 16-bit
  // copy of the parameters (0 for float32).
  virtual std::size_t activation_bytes() const = 0;
  virtual std::size_t weight_copy_bytes() const = 0;
  // Rematerialization: the blocks whose forward the last backward recomputed (the last block's
  // forward results are still in place when its backward starts: L - 1 of L, or 0).
  virtual int recomputed_blocks() const = 0;

  // Decoding (sampling/): begin_decode(B) starts B sequences; decode(tokens, n) feeds each one's
  // next n tokens (B x n, row-major) at positions p .. p+n-1 (p: the tokens fed since
  // begin_decode) through each layer's key/value cache, and returns the logits (B, V) at each
  // sequence's last new position. Needs full residency; positions end at MAX_SEQ_LEN (ConfigError).
  // The weights are read at position 0 (their 16-bit copy made there): changing them mid-sequence
  // takes effect at the next begin_decode, as the caches' keys and values would be stale anyway.
  virtual void begin_decode(std::size_t batch) = 0;
  virtual std::vector<float> decode(const std::vector<int>& tokens, std::size_t n) = 0;
  // The cache's oracle: the logits (B, V) at the last position of `ids` (B x T, row-major) by a
  // full forward pass without a cache.
  virtual std::vector<float> last_logits(const std::vector<int>& ids, std::size_t batch) = 0;

  // The phases in order, for one device. A batch of more sequences than max_batch() runs as
  // sub-batches of max_batch() (the last may be smaller): evaluate adds their loss sums; training
  // accumulates their gradients into those of the whole batch's mean loss (NUM_SUB_BATCHES,
  // praxis's ShardedStaticAccumulator), zeroing the gradients once.
  LossStats evaluate(const inputs::Batch& batch);  // forward only: loss sums and accuracy
  double loss(const inputs::Batch& batch) { return evaluate(batch).mean_loss(); }
  // Gradients of the batch's mean loss into gradient_buffer(); returns the batch's loss sums.
  // `block_done(l)` is called as soon as block l's backward (its last sub-batch's) is enqueued (l = L-1 down to 0): its
  // gradients (layout().ranges_of_blocks(l, l)) are final once the queue gets there, which is
  // when their reduction can start while earlier blocks still compute.
  LossStats train_step_gradients(const inputs::Batch& batch, const std::function<void(int)>& block_done = {});
  double forward_backward(const inputs::Batch& batch) { return train_step_gradients(batch).mean_loss(); }
};

}  // namespace paxocl::models
