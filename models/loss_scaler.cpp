#include "models/loss_scaler.h"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {

bool is_power_of_two_in_range(double s) {
  int exponent = 0;
  return s >= DynamicLossScaler::kMinScale && s <= DynamicLossScaler::kMaxScale && std::frexp(s, &exponent) == 0.5;
}

}  // namespace

DynamicLossScaler::DynamicLossScaler(Config config) : config_(config) {
  if (!config_.enabled) return;
  if (!is_power_of_two_in_range(config_.initial_scale)) {
    throw ConfigError(fmt::format("LOSS_SCALE_INITIAL={}: use a power of two from 1 to 16777216 (2^24), e.g. 65536",
                                  config_.initial_scale));
  }
  if (config_.growth_interval < 1) {
    throw ConfigError(fmt::format("LOSS_SCALE_GROWTH_INTERVAL={}: must be >= 1 (steps)", config_.growth_interval));
  }
  state_.scale = config_.initial_scale;
}

void DynamicLossScaler::update(bool applied) {
  if (!config_.enabled) return;
  if (!applied) {
    ++overflows_;
    state_.scale = std::max(kMinScale, state_.scale / 2);
    state_.clean_steps = 0;
  } else if (++state_.clean_steps >= config_.growth_interval) {
    state_.scale = std::min(kMaxScale, state_.scale * 2);
    state_.clean_steps = 0;
  }
}

void DynamicLossScaler::restore(const LossScaleState& state) {
  if (!config_.enabled) return;  // a float32 / bfloat16 run ignores a float16 run's scale
  if (!is_power_of_two_in_range(state.scale) || state.clean_steps < 0) {
    throw ConfigError(fmt::format("the checkpoint's loss scale {} (after {} clean steps) is not one a float16 run reaches",
                                  state.scale, state.clean_steps));
  }
  state_ = state;
}

}  // namespace paxocl::models
