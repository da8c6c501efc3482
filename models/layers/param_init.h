// Host-side parameter initialisation, written to a device parameter view.
#pragma once

#include <vector>

#include "models/layers/layer_context.h"
#include "common/rng.h"

namespace paxocl::models {

inline void write_gaussian(device::Queue& queue, const FloatBuffer& param, Rng& rng, float std) {
  std::vector<float> host(param.count());
  for (float& v : host) v = static_cast<float>(std * rng.normal());
  queue.write(param, std::span<const float>(host));
}

inline void write_constant(device::Queue& queue, const FloatBuffer& param, float value) {
  const std::vector<float> host(param.count(), value);
  queue.write(param, std::span<const float>(host));
}

}  // namespace paxocl::models
