// The GPT's initial parameters, computed on the host from the layout alone, so that every
// placement of them (one device, replicas, FSDP shards) starts from the same numbers:
// matrices ~ N(0, INIT_STD^2) drawn in layout order from one Rng(seed); biases 0; LN scales 1.
#pragma once

#include <cstdint>
#include <vector>

#include "models/parameter_layout.h"

namespace paxocl::models {

// (layout.total()) floats; alignment padding is 0.
std::vector<float> initial_parameters(const ParameterLayout& layout, std::uint64_t seed, float init_std);

}  // namespace paxocl::models
