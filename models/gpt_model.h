// GptModel: Pax's GPT decoder on one OpenCL device.
//   ids (B, T) -> Embedding (wte + wpe) -> NUM_LAYERS x TransformerBlock -> final LayerNorm
//   -> TiedLmHead (logits = y wte^T, weighted mean softmax cross-entropy)
// Parameters, gradients live in two flat device buffers laid out by ParameterLayout; each layer
// receives views of its own tensors and never touches another layer's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "device/program_cache.h"
#include "models/gpt_config.h"
#include "models/layers/embedding.h"
#include "models/layers/layer_norm.h"
#include "models/layers/tied_lm_head.h"
#include "models/layers/transformer_block.h"
#include "models/parameter_layout.h"
#include "inputs/batch.h"
#include "models/weights_io.h"

namespace paxocl::models {

struct GptModelOptions {
  std::size_t max_batch = 8;          // largest B a step may use
  std::size_t max_seq_len = 0;        // largest T; 0 = MAX_SEQ_LEN
  std::size_t attention_workspace_bytes = 64u << 20;  // bound on the (chunk, T, T) score workspace
  std::string gemm = "auto";          // GEMM policy (kernels_cl/auto_gemm.h)
};

class GptModel {
 public:
  GptModel(device::Device& device, device::ProgramCache& cache, const GptConfig& config, GptModelOptions options);

  void init(std::uint64_t seed);                      // Gaussian(INIT_STD) matrices, zero biases, unit LN scales
  void set_parameters(std::span<const float> flat);   // flat as ParameterLayout (size total())
  std::vector<float> parameters();
  std::vector<float> gradients();
  // Weight files (models/weights_io.h): the file's config must match this model's (INIT_STD aside);
  // tensors are copied by name, so the file's alignment may differ from the device's.
  void load_weights(const HostWeights& weights);
  HostWeights save_weights();

  LossStats evaluate(const inputs::Batch& batch);       // forward only: loss sums and accuracy
  double loss(const inputs::Batch& batch) { return evaluate(batch).mean_loss(); }
  // Gradients of the batch's mean loss into gradient_buffer(); returns the batch's loss sums.
  // `block_done(l)` is called as soon as block l's backward is enqueued (l = L-1 down to 0): its
  // gradients (layout().ranges_of_blocks(l, l)) are final once the queue gets there, which
  // is when their reduction can start while earlier blocks still compute.
  LossStats train_step_gradients(const inputs::Batch& batch, const std::function<void(int)>& block_done = {});
  double forward_backward(const inputs::Batch& batch) { return train_step_gradients(batch).mean_loss(); }

  const GptConfig& config() const { return config_; }
  const ParameterLayout& layout() const { return layout_; }
  FloatBuffer& parameter_buffer() { return params_; }
  FloatBuffer& gradient_buffer() { return grads_; }
  kernels::KernelLibrary& kernels() { return kernels_; }
  kernels::Gemm& gemm() { return *gemm_; }
  device::Device& device() { return device_; }

 private:
  LayerContext context_for(const inputs::Batch& batch);
  const FloatBuffer& forward_trunk(LayerContext& ctx, const inputs::Batch& batch);  // -> final LN output
  Param param(const std::string& name) const;

  device::Device& device_;
  GptConfig config_;
  GptModelOptions options_;
  ParameterLayout layout_;
  kernels::KernelLibrary kernels_;
  std::unique_ptr<kernels::Gemm> gemm_;
  FloatBuffer params_, grads_;
  std::unique_ptr<Embedding> embedding_;
  std::vector<TransformerBlock> blocks_;
  std::unique_ptr<LayerNorm> final_norm_;
  std::unique_ptr<TiedLmHead> head_;
};

}  // namespace paxocl::models
