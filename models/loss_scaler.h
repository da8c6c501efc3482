// DynamicLossScaler: the loss scale of float16 training, kept as PyTorch's GradScaler and
// Megatron-LM's DynamicGradScaler keep it. float16 has 5 exponent bits: activation gradients
// below 2^-24 would flush to zero, so the backward runs on scale x loss and the optimizer divides
// the scale out (AdamOptimizer's loss_scale). A step whose gradients overflowed (a non-finite
// global norm) is skipped and the scale halves; after `growth_interval` clean steps in a row it
// doubles. Scales stay powers of two in [1, 2^24], so scaling and unscaling round nothing.
// bfloat16 and float32 have float32's exponent range and run unscaled (disabled: scale 1).
// The state is part of a checkpoint: a resumed float16 run continues bitwise.
#pragma once

namespace paxocl::models {

struct LossScaleState {
  double scale = 1;      // the scale of the next step
  long clean_steps = 0;  // finite steps since the last change of scale
};

class DynamicLossScaler {
 public:
  struct Config {
    bool enabled = false;
    double initial_scale = 65536;  // 2^16, GradScaler's default
    long growth_interval = 2000;
  };
  static constexpr double kMinScale = 1, kMaxScale = 16777216;  // 2^24

  // ConfigError for an initial scale that is not a power of two in [1, 2^24] or an interval < 1.
  explicit DynamicLossScaler(Config config);

  bool enabled() const { return config_.enabled; }
  double scale() const { return state_.scale; }
  // After each step: `applied` false when its gradients were not finite.
  void update(bool applied);
  long overflows() const { return overflows_; }  // steps skipped for overflow since construction

  LossScaleState state() const { return state_; }
  void restore(const LossScaleState& state);  // ConfigError if it is not a state this scaler could reach

 private:
  Config config_;
  LossScaleState state_;
  long overflows_ = 0;
};

}  // namespace paxocl::models
