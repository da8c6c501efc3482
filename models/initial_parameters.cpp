#include "models/initial_parameters.h"

#include <algorithm>

#include "common/rng.h"

namespace paxocl::models {

std::vector<float> initial_parameters(const ParameterLayout& layout, std::uint64_t seed, float init_std) {
  std::vector<float> flat(layout.total(), 0.0f);
  Rng rng(seed);
  for (const TensorSpec& t : layout.tensors()) {
    float* values = flat.data() + t.offset;
    switch (t.init) {
      case TensorSpec::Init::kGaussian: {
        const double std = t.init_std > 0.0f ? t.init_std : init_std;
        for (std::size_t i = 0; i < t.count; ++i) values[i] = static_cast<float>(std * rng.normal());
        break;
      }
      case TensorSpec::Init::kOne:
        std::fill_n(values, t.count, 1.0f);
        break;
      case TensorSpec::Init::kZero:
        break;
    }
  }
  return flat;
}

}  // namespace paxocl::models
