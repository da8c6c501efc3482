// AdamOptimizer: Pax's learner + sharded_adam over the model's flat parameter buffer.
//   1. global gradient norm (fixed-order reduction: per-chunk sums on the device, chunks added in
//      double on the host);
//   2. a step whose norm is not finite is skipped and counted, nothing is applied;
//   3. clipping: gradients scaled by min(1, CLIP_GRADIENT_NORM_TO_VALUE / norm);
//   4. Adam with bias-corrected moments (betas 0.9 / 0.95, eps 1e-8 outside the sqrt) and
//      decoupled weight decay on the matrices only (the layout's decayed prefix).
#pragma once

#include <cstddef>

#include "kernels_cl/kernel_library.h"
#include "models/layers/layer_context.h"

namespace paxocl::models {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double epsilon = 1e-8;
  double weight_decay = 0.1;
  double clip_gradient_norm = 1.0;  // <= 0 disables clipping
};

struct OptimizerStepStats {
  double grad_norm = 0;   // before clipping
  double grad_scale = 1;  // applied clipping factor
  bool applied = false;   // false: skipped (non-finite gradients)
};

class AdamOptimizer {
 public:
  // `total` floats in params/grads; [0, decayed_end) gets weight decay.
  AdamOptimizer(device::Device& device, kernels::KernelLibrary& kernels, std::size_t total, std::size_t decayed_end,
                AdamConfig config);

  OptimizerStepStats step(FloatBuffer& params, const FloatBuffer& grads, double lr);
  double grad_norm(const FloatBuffer& grads);

  long steps_applied() const { return count_; }
  long steps_skipped() const { return skipped_; }
  FloatBuffer& first_moment() { return m_; }
  FloatBuffer& second_moment() { return v_; }

 private:
  static constexpr std::size_t kNormChunk = 4096;
  device::Device& device_;
  kernels::KernelLibrary& kernels_;
  std::size_t total_, decayed_end_;
  AdamConfig config_;
  FloatBuffer m_, v_, partial_;
  long count_ = 0, skipped_ = 0;
};

}  // namespace paxocl::models
