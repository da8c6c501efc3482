// Rematerialization (CHECKPOINT_POLICY, models/checkpoint_policy.h) on one device: under every
// policy the loss and every gradient equal SAVE_EVERYTHING's bit for bit (the recompute runs the
// forward's kernels in the forward's order), for GPT, LLaMA (grouped-query attention, RoPE on the
// recomputed projection), a GPT/S4D hybrid and an all-S4D model, in float32, bfloat16 and float16; over two steps (the shared
// buffers hold the previous pass's last block when the next begins); the backward recomputes every
// block but the last; decoding afterwards gives the same logits; and the measured activation memory
// falls as the policy keeps less.
#include <cstring>
#include <memory>

#include "inputs/batch.h"
#include "models/checkpoint_policy.h"
#include "models/llama_config.h"
#include "models/model_factory.h"
#include "tests/device_fixture.h"
#include "tests/model_configs.h"

namespace paxocl::testing {
namespace {

using models::CheckpointPolicy;

models::GptConfig gpt() { return gpt_config(3, 12, 20, 3, 4, 7, 23); }

models::GptConfig hybrid() {
  models::GptConfig c = gpt();
  c.block_kinds = {models::BlockKind::kAttention, models::BlockKind::kSsm, models::BlockKind::kAttention};
  c.ssm.state_size = 5;
  c.ssm.step_size = 0.1f;
  return c;
}

models::GptConfig ssm_only() {  // praxis's SSMTransformer: every block's mixer the SSM
  models::GptConfig c = hybrid();
  c.block_kinds = {models::BlockKind::kSsm};
  return c;
}

models::LlamaConfig llama() { return tiny_llama_config(3); }

struct PassResult {
  std::vector<double> losses;
  std::vector<float> gradients;  // the last pass's
  std::vector<float> logits;     // decoding afterwards: last_logits, then two cached steps
  std::size_t activation_bytes = 0;
  int recomputed = 0;
};

class RematTest : public DeviceTest, public ::testing::WithParamInterface<device::DType> {
 public:
  // Two passes (two batches) of `config` under `policy` from the same parameters.
  PassResult run(const models::ModelConfig& config, CheckpointPolicy policy) {
    runtimes_.push_back(std::make_unique<kernels::DeviceRuntime>(*device_, cache_, GetParam(), "auto"));
    models::ModelOptions options{2, 0, 64u << 20, 0};
    options.checkpoint_policy = policy;
    auto model = models::build_model(*runtimes_.back(), config, options);
    model->set_parameters(random_parameters(model->layout(), 1));
    PassResult r;
    const int T = static_cast<int>(config.max_seq_len());
    for (std::uint64_t seed : {2, 3}) {
      r.losses.push_back(model->forward_backward(random_batch(config.vocab_size(), 2, T, seed)));
    }
    r.gradients = model->gradients();
    // Decoding runs the blocks forward through their shared buffers and their own key/value caches.
    const inputs::Batch prompt = random_batch(config.vocab_size(), 2, 3, 4);
    r.logits = model->last_logits(prompt.ids, 2);
    model->begin_decode(2);
    for (const std::vector<int>& tokens : {prompt.ids, std::vector<int>{1, 2}}) {
      const std::vector<float> step = model->decode(tokens, tokens.size() / 2);
      r.logits.insert(r.logits.end(), step.begin(), step.end());
    }
    r.activation_bytes = model->activation_bytes();
    r.recomputed = model->recomputed_blocks();
    return r;
  }

  void expect_every_policy_matches(const models::ModelConfig& config) {
    const PassResult everything = run(config, CheckpointPolicy::kSaveEverything);
    EXPECT_EQ(everything.recomputed, 0);
    for (const std::string& name : models::checkpoint_policy_names()) {
      const CheckpointPolicy policy = models::checkpoint_policy_from_name(name);
      if (!models::rematerializes(policy)) continue;
      SCOPED_TRACE(name);
      const PassResult r = run(config, policy);
      ASSERT_EQ(r.losses.size(), everything.losses.size());
      for (std::size_t i = 0; i < r.losses.size(); ++i) {
        EXPECT_EQ(std::memcmp(&r.losses[i], &everything.losses[i], sizeof(double)), 0)
            << "pass " << i << ": " << r.losses[i] << " vs " << everything.losses[i];
      }
      ASSERT_EQ(r.gradients.size(), everything.gradients.size());
      EXPECT_EQ(std::memcmp(r.gradients.data(), everything.gradients.data(), r.gradients.size() * sizeof(float)), 0)
          << "gradients differ";
      EXPECT_EQ(r.recomputed, config.num_blocks() - 1);  // the last block's results are still in place
      ASSERT_EQ(r.logits.size(), everything.logits.size());
      EXPECT_EQ(std::memcmp(r.logits.data(), everything.logits.data(), r.logits.size() * sizeof(float)), 0)
          << "decoded logits differ";
      EXPECT_LT(r.activation_bytes, everything.activation_bytes);
    }
    // SAVE_NOTHING keeps least: at most every other policy's bytes.
    const std::size_t nothing = run(config, CheckpointPolicy::kSaveNothing).activation_bytes;
    EXPECT_LE(nothing, run(config, CheckpointPolicy::kSaveDotOnly).activation_bytes);
  }

 private:
  device::DType act_dtype() const override { return GetParam(); }
  std::vector<std::unique_ptr<kernels::DeviceRuntime>> runtimes_;
};

TEST_P(RematTest, GptLossAndGradientsEqualSaveEverythingBitForBit) { expect_every_policy_matches(gpt()); }
TEST_P(RematTest, LlamaLossAndGradientsEqualSaveEverythingBitForBit) { expect_every_policy_matches(llama()); }
TEST_P(RematTest, HybridLossAndGradientsEqualSaveEverythingBitForBit) { expect_every_policy_matches(hybrid()); }
TEST_P(RematTest, SsmLossAndGradientsEqualSaveEverythingBitForBit) { expect_every_policy_matches(ssm_only()); }

INSTANTIATE_TEST_SUITE_P(DTypes, RematTest, ::testing::Values(device::DType::kF32, device::DType::kBF16, device::DType::kF16),
                         [](const ::testing::TestParamInfo<device::DType>& p) {
                           return std::string(device::dtype_name(p.param));
                         });

TEST(CheckpointPolicy, UnknownNameIsAOneLineErrorListingTheValidOnes) {
  try {
    models::checkpoint_policy_from_name("SAVE_SOME");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CHECKPOINT_POLICY=SAVE_SOME"), std::string::npos) << what;
    for (const std::string& name : models::checkpoint_policy_names()) EXPECT_NE(what.find(name), std::string::npos) << name;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

// The recompute's FLOPs by hand: every block but the last runs its unkept sites' GEMMs again.
TEST(CheckpointPolicy, RecomputeFlopsByHand) {
  const double C = 12, D = 3 * 4, F = 20, T = 7;
  const double qkv = 2 * C * 3 * D, context = 4 * T * D, out_proj = 2 * D * C, ffn1 = 2 * C * F;
  const auto flops = [](const models::ModelConfig& m, CheckpointPolicy p, bool sp = false) {
    return models::recompute_flops_per_token(m, models::saved_sites(p, sp), 7);
  };
  EXPECT_EQ(flops(gpt(), CheckpointPolicy::kSaveEverything), 0.0);
  EXPECT_DOUBLE_EQ(flops(gpt(), CheckpointPolicy::kSaveNothing), 2 * (qkv + context + out_proj + ffn1));
  // in 3 pipeline stages of one block each, every block is its stage's last: nothing is recomputed
  EXPECT_EQ(models::recompute_flops_per_token(gpt(), models::saved_sites(CheckpointPolicy::kSaveNothing, false), 7, 3), 0.0);
  EXPECT_DOUBLE_EQ(flops(gpt(), CheckpointPolicy::kSaveDotWithNoBatchDim), 2 * context);
  EXPECT_DOUBLE_EQ(flops(gpt(), CheckpointPolicy::kSaveDotExceptLogitsFfn1), 2 * ffn1);
  EXPECT_DOUBLE_EQ(flops(gpt(), CheckpointPolicy::kSaveQkvOutProj), 2 * (context + ffn1));
  // under sequence parallelism out_proj is recomputed with the residual sum
  EXPECT_DOUBLE_EQ(flops(gpt(), CheckpointPolicy::kSaveQkvOutProj, true), 2 * (context + out_proj + ffn1));
  // the hybrid's blocks 0 (attention) and 1 (SSM, whose convolution FLOPs the model does not count)
  EXPECT_DOUBLE_EQ(flops(hybrid(), CheckpointPolicy::kSaveNothing), (qkv + context + out_proj + ffn1) + ffn1);
  // LLaMA: 4 query and 2 kv heads of 4, SwiGLU's gate and up
  const double Dl = 4 * 4, llama_qkv = 2 * C * (4 + 2 * 2) * 4, llama_ffn1 = 2 * C * 2 * F;
  EXPECT_DOUBLE_EQ(models::recompute_flops_per_token(llama(), models::saved_sites(CheckpointPolicy::kSaveNothing, false), 9),
                   2 * (llama_qkv + 4 * 9 * Dl + 2 * Dl * C + llama_ffn1));
}

TEST(CheckpointPolicy, SitesFollowPraxisNames) {
  using models::BlockSite;
  const auto kept = [](CheckpointPolicy p, bool sp = false) { return models::saved_sites(p, sp); };
  EXPECT_TRUE(kept(CheckpointPolicy::kSaveEverything).everything());
  for (BlockSite s : {BlockSite::kNorm1, BlockSite::kQkvProj, BlockSite::kContext, BlockSite::kOutProj,
                      BlockSite::kNorm2, BlockSite::kFfn1, BlockSite::kFfn2, BlockSite::kSsm}) {
    EXPECT_FALSE(kept(CheckpointPolicy::kSaveNothing).has(s));
  }
  EXPECT_TRUE(kept(CheckpointPolicy::kSaveNothing).has(BlockSite::kLayerOut));
  const auto no_batch = kept(CheckpointPolicy::kSaveDotWithNoBatchDim);
  EXPECT_TRUE(no_batch.has(BlockSite::kQkvProj) && no_batch.has(BlockSite::kOutProj) && no_batch.has(BlockSite::kFfn1));
  EXPECT_FALSE(no_batch.has(BlockSite::kContext) || no_batch.has(BlockSite::kNorm1) || no_batch.has(BlockSite::kFfn2));
  const auto except_ffn1 = kept(CheckpointPolicy::kSaveDotExceptLogitsFfn1);
  EXPECT_TRUE(except_ffn1.has(BlockSite::kContext) && !except_ffn1.has(BlockSite::kFfn1));
  EXPECT_TRUE(kept(CheckpointPolicy::kSaveOutProj).has(BlockSite::kOutProj));
  EXPECT_FALSE(kept(CheckpointPolicy::kSaveOutProj, true).has(BlockSite::kOutProj));  // the reduce-scatter's workspace
}

}  // namespace
}  // namespace paxocl::testing
