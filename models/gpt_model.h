// GptModel: Pax's GPT decoder on one OpenCL device; the first models::Model (model.h).
//   ids (B, T) -> Embedding (wte + wpe) -> NUM_LAYERS x TransformerBlock -> final LayerNorm
//   -> TiedLmHead (logits = y wte^T, weighted mean softmax cross-entropy)
// Parameters, gradients live in two device buffers; each layer receives views of its own tensors
// and never touches another layer's. With full residency (the default) the buffers are the flat
// ParameterLayout; with FSDP residency they hold only the unit outside the blocks and a few block
// slots, which a scheduler fills by all-gathers (scheduler/fsdp_step.h).
// It runs on a kernels::DeviceRuntime (device, kernels, GEMM), which it uses and does not own.
// Mixed precision (Pax's FPROP_DTYPE, the runtime's act_dtype()): with bfloat16 or float16, activations and
// their gradients are stored in it and every weight is read from a copy of the parameters in it
// (Param::compute), cast from the float32 parameters at the start of each pass (FSDP residency:
// each unit when it is used); parameters, gradients and the optimizer stay float32, and every
// GEMM and reduction accumulates in float32.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kernels_cl/device_runtime.h"
#include "models/gpt_config.h"
#include "models/layers/embedding.h"
#include "models/layers/layer_norm.h"
#include "models/layers/tied_lm_head.h"
#include "models/layers/transformer_block.h"
#include "models/model.h"
#include "models/parameter_layout.h"
#include "inputs/batch.h"
#include "models/weights_io.h"

namespace paxocl::models {

class GptModel : public Model {
 public:
  GptModel(kernels::DeviceRuntime& runtime, const GptConfig& config, ModelOptions options);

  // Parameter images need full residency (ConfigError otherwise).
  void init(std::uint64_t seed);                      // models/initial_parameters.h
  void set_parameters(std::span<const float> flat) override;  // flat as ParameterLayout (size total())
  std::vector<float> parameters() override;
  std::vector<float> gradients() override;
  // Weight files (models/weights_io.h): the file's config must match this model's (INIT_STD aside);
  // tensors are copied by name, so the file's alignment may differ from the device's.
  void load_weights(const HostWeights& weights);
  // The file's tensors as this model's flat layout image (any residency).
  std::vector<float> flat_from_weights(const HostWeights& weights) const override;
  HostWeights save_weights();

  void set_loss_scale(float scale) override { loss_scale_ = scale; }
  float loss_scale() const { return loss_scale_; }

  Pass begin_pass(const inputs::Batch& batch, bool gradients) override;
  void forward_block(Pass& pass, int block) override;
  LossStats forward_loss(Pass& pass) override;
  void begin_backward(Pass& pass) override;
  void backward_block(Pass& pass, int block) override;
  void finish_backward(Pass& pass) override;

  // FSDP residency: the device memory of a unit (ParameterLayout::unit(block), block -1 for the
  // one outside the blocks): block l's is its slot's, shared with the blocks l +- k*slots.
  FloatBuffer unit_parameters(int block) const override;
  FloatBuffer unit_gradients(int block) const override;
  int resident_block_slots() const { return options_.resident_block_slots; }

  const GptConfig& config() const { return config_; }
  const ParameterLayout& layout() const override { return layout_; }
  FloatBuffer& parameter_buffer() override { return params_; }
  // The weights as a step reads them: params_ cast to fprop_dtype (for float32, params_ itself).
  const ActBuffer& compute_buffer() const { return compute_; }
  FloatBuffer& gradient_buffer() override { return grads_; }
  kernels::DeviceRuntime& runtime() const override { return runtime_; }
  // Device memory the layers allocated at construction for activations, their gradients and
  // workspaces (measured: the buffers created), for max_batch x max_seq_len rows.
  std::size_t activation_bytes() const override { return activation_bytes_; }
  // The 16-bit copy of the resident parameters (0 for float32, which reads params_ itself).
  std::size_t weight_copy_bytes() const override {
    return runtime_.act_dtype() == device::DType::kF32 ? 0 : compute_.bytes();
  }

 private:
  LayerContext context_for(const inputs::Batch& batch);
  Param param(std::string_view name) const;
  std::size_t device_offset(const TensorSpec& t) const;  // where t lives in params_ / grads_
  std::size_t unit_device_offset(int block) const;       // FSDP residency: where unit(block) starts
  std::size_t resident_floats() const;                    // size of params_ / grads_
  void require_full_residency(const char* what) const;
  void cast_unit(int block);  // compute_ <- params_ over unit(block)'s range (FSDP residency)

  kernels::DeviceRuntime& runtime_;
  GptConfig config_;
  ModelOptions options_;
  ParameterLayout layout_;
  ParameterLayout::Unit rest_unit_, block_unit_;  // unit(-1), unit(0): sizes of FSDP residency
  FloatBuffer params_, grads_;
  ActBuffer compute_;  // params_ in fprop_dtype; shares params_' memory for float32
  std::unique_ptr<Embedding> embedding_;
  std::vector<TransformerBlock> blocks_;
  std::unique_ptr<LayerNorm> final_norm_;
  std::unique_ptr<TiedLmHead> head_;
  std::size_t activation_bytes_ = 0;
  float loss_scale_ = 1.0f;
};

}  // namespace paxocl::models
