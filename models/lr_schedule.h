// Learning-rate schedule: Pax's linear_rampup_cosine_decay (praxis LinearRampupCosineDecay):
//   step < warmup:                 peak * step / warmup          (linear from 0)
//   warmup <= step < decay_start:  peak
//   decay_start <= step < decay_end: cosine from peak down to peak * min_ratio
//   step >= decay_end:             peak * min_ratio
// Hyper-parameters: LEARNING_RATE, LR_COS_WARMUP, LR_COS_DECAY_START, LR_COS_DECAY_END, LR_COS_MIN_RATIO.
#pragma once

namespace paxocl::models {

struct LrSchedule {
  double peak = 6e-4;
  long warmup = 0;
  long decay_start = 1;
  long decay_end = 100000;
  double min_ratio = 0.1;

  void validate() const;  // ConfigError unless 0 <= warmup <= decay_start <= decay_end, 0 <= min_ratio <= 1
  double at(long step) const;
};

}  // namespace paxocl::models
