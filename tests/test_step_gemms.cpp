// bench::model_gemm_cases (what `pax-ocl bench gemm`'s "step" row and `pax-ocl tune` time) against
// the model's own FLOP count, GptConfig::flops_per_token (what MFU divides by): the step's GEMMs are
// 6 FLOPs per matrix parameter and token, plus attention's 12 L T D per token, plus the q k^T the
// backward recomputes (2 L T D per token; flops_per_token, like PaLM's count, leaves it out).
#include <gtest/gtest.h>

#include "bench/suite/benches.h"
#include "config/experiment.h"

namespace paxocl {
namespace {

TEST(StepGemms, FlopsAreTheModelsCountPlusTheRecomputedScores) {
  for (const char* name : {"Default", "Pile126M", "GPT5B"}) {
    const models::GptConfig c = config::Experiment::named(name).model_config().gpt();
    for (std::size_t batch : {1u, 3u}) {
      double flops = 0;
      for (const bench::GemmCase& g : bench::model_gemm_cases(c, batch)) flops += bench::gemm_flops(g);
      const double T = c.max_seq_len, tokens = static_cast<double>(batch) * T;
      const double expected = tokens * (c.flops_per_token(c.max_seq_len) + 2.0 * c.num_layers * T * c.attention_dims());
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
