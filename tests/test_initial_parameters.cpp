// models/initial_parameters: the parallel initialisation gives bitwise the values of the one
// sequential stream it is defined by (common/rng.h, tensors in layout order, two draws per
// Gaussian value), whatever the number of threads and pieces.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/rng.h"
#include "models/initial_parameters.h"
#include "tests/model_configs.h"

namespace paxocl::models {
namespace {

// The definition, written out: one generator for the whole layout.
std::vector<float> sequential(const ParameterLayout& layout, std::uint64_t seed, float init_std) {
  std::vector<float> flat(layout.total(), 0.0f);
  Rng rng(seed);
  for (const TensorSpec& t : layout.tensors()) {
    for (std::size_t i = 0; i < t.count; ++i) {
      float& x = flat[t.offset + i];
      if (t.init == TensorSpec::Init::kGaussian) x = static_cast<float>((t.init_std > 0.0f ? t.init_std : init_std) * rng.normal());
      if (t.init == TensorSpec::Init::kOne) x = 1.0f;
    }
  }
  return flat;
}

TEST(InitialParameters, ParallelPiecesEqualTheSequentialStreamBitForBit) {
  // The second model's embedding (8192 x 160 = 1.3M values) spans two pieces of 2^20.
  for (const GptConfig& config : {testing::gpt_config(3, 36, 100, 3, 12, 16, 500), testing::gpt_config(1, 160, 640, 4, 40, 64, 8192)}) {
    const ParameterLayout layout(config, 16);
    for (const std::uint64_t seed : {0ull, 1234ull}) {
      const std::vector<float> got = initial_parameters(layout, seed, 0.02f), want = sequential(layout, seed, 0.02f);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "seed " << seed;
    }
  }
}

TEST(InitialParameters, DiscardSkipsDrawsExactly) {
  Rng a(99), b(99);
  for (int i = 0; i < 1001; ++i) a.next_u64();
  b.discard(1001);
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

}  // namespace
}  // namespace paxocl::models
