// AdamOptimizer: Pax's learner + sharded_adam over the model's flat parameter buffer.
//   1. global gradient norm (fixed-order reduction: per-chunk sums on the device, chunks added in
//      double on the host);
//   2. a step whose norm is not finite is skipped and counted, nothing is applied (with float16
//      loss scaling, an overflow: the scaler halves the scale);
//   3. clipping: gradients scaled by min(1, CLIP_GRADIENT_NORM_TO_VALUE / norm);
//   4. Adam with bias-corrected moments (betas 0.9 / 0.95, eps 1e-8 outside the sqrt) and
//      decoupled weight decay on the matrices only (the layout's decayed prefix, or, on an FSDP
//      shard, the decayed segments).
// Sharded (FSDP, Pax's sharded_adam): sharded_adam_step() below; every shard's optimizer updates
// its own part with the norm of the whole job's gradients.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "kernels_cl/device_runtime.h"
#include "models/layers/layer_context.h"
#include "models/parameter_layout.h"

namespace paxocl::models {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double epsilon = 1e-8;
  double weight_decay = 0.1;
  double clip_gradient_norm = 1.0;  // <= 0 disables clipping
};

struct OptimizerStepStats {
  double grad_norm = 0;   // before clipping (loss scale divided out)
  double grad_scale = 1;  // applied clipping factor
  bool applied = false;   // false: skipped (non-finite gradients)
};

class AdamOptimizer {
 public:
  struct Segment {
    std::size_t offset = 0, count = 0;
    bool decay = false;  // weight decay applies
  };
  // `total` floats in params/grads; [0, decayed_end) gets weight decay.
  AdamOptimizer(kernels::DeviceRuntime& runtime, std::size_t total, std::size_t decayed_end, AdamConfig config);
  // `total` floats; each segment's decay as given; floats in no segment are left alone.
  AdamOptimizer(kernels::DeviceRuntime& runtime, std::size_t total, std::vector<Segment> segments, AdamConfig config);
  // A shard's optimizer that steps elements [origin, origin + total) of the params and grads it is
  // given (whole buffers: OpenCL cannot view a view); its moments and `segments` count from origin.
  // FSDP inside a pipeline stage (scheduler/pipeline_step.h).
  AdamOptimizer(kernels::DeviceRuntime& runtime, std::size_t origin, std::size_t total, std::vector<Segment> segments,
                AdamConfig config);

  // `grads` are loss_scale times the loss's gradients (models/loss_scaler.h; 1: unscaled): the
  // norm, the skip test and clipping see them divided by it, and so does the update.
  OptimizerStepStats step(FloatBuffer& params, const FloatBuffer& grads, double lr, double loss_scale = 1.0);
  // `grad_norm`: the global norm of which `grads` is a part, still multiplied by loss_scale.
  OptimizerStepStats step_with_norm(FloatBuffer& params, const FloatBuffer& grads, double lr, double grad_norm,
                                    double loss_scale = 1.0);
  double grad_norm(const FloatBuffer& grads);
  double sum_squares(const FloatBuffer& grads);  // fixed-order sum over its `total` floats (from origin)
  // The same over `ranges` of `grads` only (offset, count, from grads' start whatever the origin;
  // decay ignored), summed in their order.
  double sum_squares(const FloatBuffer& grads, std::span<const Segment> ranges);

  long steps_applied() const { return count_; }
  long steps_skipped() const { return skipped_; }
  // A restored state: moments (`total` floats each) and step counts, as a checkpoint saved them.
  void load_state(std::span<const float> m, std::span<const float> v, long applied, long skipped);
  FloatBuffer& first_moment() { return m_; }
  FloatBuffer& second_moment() { return v_; }

 private:
  static constexpr std::size_t kNormChunk = 4096;
  kernels::DeviceRuntime& runtime_;
  std::size_t origin_ = 0;  // of the moments' element 0 in params and grads
  std::size_t total_;
  std::vector<Segment> segments_;
  AdamConfig config_;
  FloatBuffer m_, v_, partial_;
  long count_ = 0, skipped_ = 0;
};

// One optimizer step over shards of the parameters (FSDP): the global norm from the `counted`
// shards' squares (every gradient element of the job counted exactly once: a shard replicated
// along data is counted on one replica), summed over the processes by `all_reduce_sum` (each
// process passes its partial sum and gets the job's), then every shard's update with that norm.
// Returns the stats of the last shard (all agree: one norm, one decision to skip).
struct AdamShard {
  AdamOptimizer* adam = nullptr;
  FloatBuffer* params = nullptr;
  const FloatBuffer* grads = nullptr;
  bool counted = false;
  // When counted: only these ranges of it (tensor parallelism leaves replicas out); empty: all of it.
  std::span<const AdamOptimizer::Segment> counted_ranges = {};
};
// The segments of [0, total) outside `excluded` (sorted, disjoint): what a device adds to the global
// norm when `excluded` holds copies another device counts (tensor-parallel replicas, a pipeline's
// tied tensor on its last stage).
std::vector<AdamOptimizer::Segment> segments_outside(std::size_t total, const std::vector<ParameterLayout::Range>& excluded);

OptimizerStepStats sharded_adam_step(std::span<const AdamShard> shards, double lr, double loss_scale,
                                     const std::function<void(std::vector<double>&)>& all_reduce_sum);

}  // namespace paxocl::models
