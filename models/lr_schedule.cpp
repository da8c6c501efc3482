#include "models/lr_schedule.h"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

void LrSchedule::validate() const {
  if (warmup < 0 || decay_start < warmup || decay_end < decay_start) {
    throw ConfigError(fmt::format("LR_COS_WARMUP={} <= LR_COS_DECAY_START={} <= LR_COS_DECAY_END={} must hold, all >= 0",
                                  warmup, decay_start, decay_end));
  }
  if (!(min_ratio >= 0 && min_ratio <= 1)) throw ConfigError(fmt::format("LR_COS_MIN_RATIO={}: must be in [0, 1]", min_ratio));
  if (!(peak >= 0)) throw ConfigError(fmt::format("LEARNING_RATE={}: must be >= 0", peak));
}

double LrSchedule::at(long step) const {
  if (step < warmup) return peak * static_cast<double>(step) / static_cast<double>(warmup);
  if (step < decay_start) return peak;
  if (step < decay_end) {
    const double progress = static_cast<double>(step - decay_start) / static_cast<double>(decay_end - decay_start);
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + std::cos(M_PI * progress)));
  }
  return peak * min_ratio;
}

}  // namespace paxocl::models
