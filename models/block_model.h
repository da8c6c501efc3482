// BlockModel: the part of a Model (model.h) that every family shares: the float32 parameter and
// gradient buffers over the family's ParameterLayout, FSDP residency, the step's copy of the weights
// in the activation dtype, views of each tensor for the layers (Param), weight images and loss
// scaling. A family (GptModel, LlamaModel) builds its layers on param() and implements the pass.
//
// Residency: with ModelOptions::resident_block_slots = 0 the buffers are the flat layout; with k > 0
// they hold unit(-1) then k block slots (each ParameterLayout::Unit-packed) and block l lives in slot
// l % k, filled by the scheduler's all-gathers (scheduler/fsdp_step.h). A slot is as large as the
// largest block's unit (a hybrid's attention and SSM blocks differ); a smaller one uses its prefix.
// Pipeline stages (ModelOptions::stage): the layout holds the stage's tensors (stage_split.h);
// parameter images (set_parameters, parameters) are the stage's layout, init and flat_from_weights
// start from the whole model's. Instances built with ModelOptions::shared_parameters view another's
// parameter, gradient and weight-copy buffers and own only their activations.
// Mixed precision: with bfloat16 or float16 activations every weight is read from compute_buffer(),
// a copy of the parameters in that dtype, cast at the start of each pass (FSDP residency: each unit
// when it is used); parameters, gradients and the optimizer stay float32.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kernels_cl/device_runtime.h"
#include "models/layers/buffer_source.h"
#include "models/layers/sequence_parallel.h"
#include "models/model.h"
#include "models/model_config.h"
#include "models/parameter_layout.h"
#include "models/stage_split.h"
#include "models/weights_io.h"

namespace paxocl::models {

class BlockModel : public Model {
 public:
  // Parameter images need full residency (ConfigError otherwise).
  // Under tensor parallelism init and load_weights set this device's parts of the whole model's
  // numbers; flat_from_weights gives the whole model's image (the job's layout).
  void init(std::uint64_t seed);                              // models/initial_parameters.h
  void set_parameters(std::span<const float> flat) override;  // flat as ParameterLayout (size total())
  std::vector<float> parameters() override;
  std::vector<float> gradients() override;
  // Weight files (models/weights_io.h): the file's architecture and shapes must match this model's
  // (INIT_STD aside; ConfigError naming both); tensors are copied by name, so the file's alignment
  // may differ from the device's.
  void load_weights(const HostWeights& weights);
  std::vector<float> flat_from_weights(const HostWeights& weights) const override;
  HostWeights save_weights();  // ConfigError under tensor parallelism (the job assembles whole images)

  void set_loss_scale(float scale) override { loss_scale_ = scale; }
  float loss_scale() const { return loss_scale_; }

  // FSDP residency: the device memory of a unit (ParameterLayout::unit(block), block -1 for the
  // one outside the blocks): block l's is its slot's, shared with the blocks l +- k*slots.
  FloatBuffer unit_parameters(int block) const override;
  FloatBuffer unit_gradients(int block) const override;
  int resident_block_slots() const override { return options_.resident_block_slots; }
  void set_tensor_group(TensorGroup* group) override { tensor_group_ = group; }
  const TensorShard& tensor_shard() const { return options_.tensor; }

  const ModelConfig& model_config() const { return config_; }
  const ParameterLayout& layout() const override { return layout_; }
  int vocab_size() const override { return config_.vocab_size(); }
  std::size_t max_seq_len() const override { return options_.max_seq_len; }
  std::size_t max_batch() const override { return options_.max_batch; }
  FloatBuffer& parameter_buffer() override { return params_; }
  // The weights as a step reads them: params_ cast to the activation dtype (float32: params_ itself).
  const ActBuffer& compute_buffer() const { return compute_; }
  FloatBuffer& gradient_buffer() override { return grads_; }
  ParameterBuffers parameter_buffers() const override { return {params_, grads_, compute_}; }
  ActBuffer& stage_input() override;
  ActBuffer& stage_output_gradient() override;
  const StageSpan& stage() const { return options_.stage; }
  kernels::DeviceRuntime& runtime() const override { return runtime_; }
  // Device memory the layers allocated at construction for activations, their gradients and
  // workspaces (measured: the buffers created), for max_batch x max_seq_len rows.
  std::size_t activation_bytes() const override { return activation_bytes_; }
  // The 16-bit copy of the resident parameters (0 for float32, which reads params_ itself).
  std::size_t weight_copy_bytes() const override {
    return runtime_.act_dtype() == device::DType::kF32 ? 0 : compute_.bytes();
  }

 protected:
  // Validates `config`, allocates the zeroed parameter and gradient buffers (and the compute copy).
  BlockModel(kernels::DeviceRuntime& runtime, ModelConfig config, ModelOptions options);

  // Views of a tensor of the layout, for a layer.
  Param param(std::string_view name) const;
  std::size_t max_rows() const { return options_.max_batch * options_.max_seq_len; }
  // The rows of the residual stream this device holds, for the blocks' and the norms' buffers:
  // max_rows(), or under sequence parallelism its shard.
  std::size_t stream_rows() const;
  // Call around the layers' construction: what they allocate is activation_bytes() (with sequence
  // parallelism's workspaces, which begin_layers allocates).
  void begin_layers();
  // Where block `block_prefix`'s layer storing at `site` gets its buffers (the policy's sharing).
  BufferSource block_buffers(const std::string& block_prefix, BlockSite site);
  SavedSites saved_sites() const { return saved_sites_; }
  void end_layers() { activation_bytes_ = runtime_.device().context().bytes_allocated() - allocated_before_layers_; }

  // The phases' shared parts. start_pass checks the batch against the model (DataError), zeroes the
  // gradients when asked (every gradient kernel accumulates) and casts the step's weights: all, or
  // under FSDP residency the unit outside the blocks. prepare_block casts block l's slot under FSDP
  // residency (the scheduler has gathered it; in the backward it may hold another block's by then).
  LayerContext start_pass(const inputs::Batch& batch, bool gradients);
  void prepare_block(int block);
  // Decoding: checks `tokens` (batch x n, ids < V, positions first_position + n within MAX_SEQ_LEN
  // and the model's batch; DataError or ConfigError), casts the weights at first_position 0 (a
  // sequence's later tokens keep that copy: Model::decode); the context of the rows.
  LayerContext start_decode(const std::vector<int>& tokens, std::size_t batch, std::size_t n, std::size_t first_position);

  ModelOptions options_;

 private:
  std::size_t device_offset(const TensorSpec& t) const;  // where t lives in params_ / grads_
  std::size_t unit_device_offset(int block) const;       // FSDP residency: where unit(block) starts
  std::size_t resident_floats() const;                    // size of params_ / grads_
  void require_full_residency(const char* what) const;
  std::vector<float> own_image(std::span<const float> whole) const;  // the whole model's image -> this device's
  void cast_unit(int block);  // compute_ <- params_ over unit(block)'s range (FSDP residency)

  kernels::DeviceRuntime& runtime_;
  ModelConfig config_;
  ParameterLayout layout_;  // this device's tensors (tensor parallelism: its parts; a stage: its own)
  std::unique_ptr<ParameterLayout> global_layout_;  // tensor or pipeline parallelism: the whole model's, and the split
  std::unique_ptr<TensorSplit> split_;     // tensor parallelism without stages: whole -> the rank's parts
  std::unique_ptr<StagePart> stage_part_;  // a pipeline stage: whole -> (the rank's parts ->) its tensors
  TensorGroup* tensor_group_ = nullptr;
  std::unique_ptr<SequenceParallel> sequence_;  // sequence parallelism's workspaces
  SavedSites saved_sites_;
  std::unique_ptr<SharedActivations> shared_;  // the blocks' shared buffers, from begin_layers
  // Pipeline stages, from begin_layers: a later stage's input (B*T, C) and an earlier stage's
  // output gradient (B*T, C), received from the neighbouring stages.
  std::optional<ActBuffer> stage_input_, stage_output_gradient_;
  // Sizes of FSDP residency: unit(-1), unit(0), ... (blocks of different kinds differ; a slot holds the largest).
  std::vector<std::size_t> unit_floats_;
  std::size_t unit_floats(int block) const { return unit_floats_.at(static_cast<std::size_t>(block + 1)); }
  std::size_t slot_floats() const;
  FloatBuffer params_, grads_;
  ActBuffer compute_;  // params_ in the activation dtype; shares params_' memory for float32
  std::size_t allocated_before_layers_ = 0, activation_bytes_ = 0;
  float loss_scale_ = 1.0f;
};

}  // namespace paxocl::models
