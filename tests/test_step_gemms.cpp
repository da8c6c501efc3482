// bench::model_gemm_cases (what `pax-ocl bench gemm`'s "step" row and `pax-ocl tune` time) against
// the model's own FLOP count, GptConfig::flops_per_token (what MFU divides by): the step's GEMMs are
// 6 FLOPs per matrix parameter and token, plus attention's: 12 L T D per token for the full T x T
// products, 14 with the q k^T the backward recomputes, and of that, with n query blocks of equal
// size, the causal blocks' share (n + 1) / 2n.
#include <gtest/gtest.h>

#include "bench/suite/benches.h"
#include "config/experiment.h"
#include "models/layers/causal_attention.h"

namespace paxocl {
namespace {

TEST(StepGemms, FlopsAreTheModelsCountWithRecomputedScoresAndCausalBlocks) {
  for (const char* name : {"Default", "Pile126M", "GPT5B"}) {
    const models::GptConfig c = config::Experiment::named(name).model_config().gpt();
    const std::size_t T = static_cast<std::size_t>(c.max_seq_len), block = models::CausalAttention::kQueryBlock;
    ASSERT_TRUE(T <= block || T % block == 0) << name << ": the closed form needs equal blocks";
    const double n = T <= block ? 1.0 : static_cast<double>(T / block);
    for (std::size_t batch : {1u, 3u}) {
      double flops = 0;
      for (const bench::GemmCase& g : bench::model_gemm_cases(c, batch)) flops += bench::gemm_flops(g);
      const double tokens = static_cast<double>(batch * T), full_attention = 12.0 * c.num_layers * T * c.attention_dims();
      const double linear = c.flops_per_token(c.max_seq_len) - full_attention;
      const double expected = tokens * (linear + full_attention * 14.0 / 12.0 * (n + 1) / (2 * n));
      EXPECT_NEAR(flops, expected, 1e-12 * expected) << name << " batch " << batch;
    }
  }
}

TEST(StepGemms, EveryLinearHasItsForwardAndBothGradients) {
  const models::GptConfig c = config::Experiment::named("Default").model_config().gpt();
  std::size_t linear = 0;
  for (const bench::GemmCase& g : bench::model_gemm_cases(c, 2)) {
    if (g.name.ends_with(" fwd") || g.name.ends_with(" dW") || g.name.ends_with(" dX")) {
      ++linear;
      EXPECT_EQ(g.count, g.name.starts_with("lm head") ? 1u : static_cast<std::size_t>(c.num_layers)) << g.name;
    }
  }
  EXPECT_EQ(linear, 15u);  // qkv, attn.proj, fc, fc.proj, lm head: x W^T, dy^T x, dy W
}

}  // namespace
}  // namespace paxocl
