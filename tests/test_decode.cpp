// Decoding with the key/value cache (Model::begin_decode / decode) against full recomputation
// (Model::last_logits, no cache), for both families and a GPT with an SSM block (its recurrent
// state against its convolution) on random weights: greedy decoding gives the
// same tokens step for step and logits equal to float32 rounding; a prompt fed in pieces equals
// the prompt fed whole; positions past MAX_SEQ_LEN are a one-line error.
#include <algorithm>
#include <cmath>

#include "common/errors.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "models/model_factory.h"
#include "plan/decode_memory.h"
#include "tests/device_fixture.h"
#include "tests/model_configs.h"

namespace paxocl::testing {
namespace {

models::ModelConfig llama_config() {
  models::LlamaConfig c;
  c.num_layers = 2;
  c.model_dims = 24;
  c.hidden_dims = 40;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.dims_per_head = 6;
  c.max_seq_len = 20;
  c.vocab_size = 37;
  c.rope_base = 100.0f;
  return c;
}

models::ModelConfig gpt_config_for_decoding() { return gpt_config(2, 24, 40, 4, 6, 20, 37); }

// praxis's SSMTransformer block after an attention block: the SSM decodes by its recurrent form
// (complex state per channel), which must equal its convolutional form over the whole sequence.
models::ModelConfig hybrid_config_for_decoding() {
  models::GptConfig c = gpt_config(2, 24, 40, 4, 6, 20, 37);
  c.block_kinds = {models::BlockKind::kSsm, models::BlockKind::kAttention};
  c.ssm.state_size = 6;
  c.ssm.step_size = 0.1f;
  return c;
}

enum class Family { kGpt, kLlama, kHybrid };

int argmax(const float* row, int V) { return static_cast<int>(std::max_element(row, row + V) - row); }

class DecodeTest : public DeviceTest, public ::testing::WithParamInterface<Family> {
 public:
  models::ModelConfig config() const {
    switch (GetParam()) {
      case Family::kLlama: return llama_config();
      case Family::kHybrid: return hybrid_config_for_decoding();
      case Family::kGpt: break;
    }
    return gpt_config_for_decoding();
  }
  std::unique_ptr<models::Model> make_model(std::size_t max_batch, device::DType act = device::DType::kF32) {
    runtime_ = std::make_unique<kernels::DeviceRuntime>(*device_, cache_, act, "auto");
    return another_model(max_batch, 5);
  }
  // On the last make_model's runtime, its weights drawn from `seed`.
  std::unique_ptr<models::Model> another_model(std::size_t max_batch, std::uint64_t seed) {
    auto model = models::build_model(*runtime_, config(), models::ModelOptions{max_batch, 0, 64u << 20, 0});
    model->set_parameters(random_parameters(model->layout(), seed, 0.5));
    return model;
  }
  std::unique_ptr<kernels::DeviceRuntime> runtime_;
};

TEST_P(DecodeTest, GreedyWithTheCacheEqualsGreedyByRecomputation) {
  const int B = 2, V = config().vocab_size(), prompt = 3, steps = 14;
  auto model = make_model(B);
  std::vector<std::vector<int>> seqs = {{5, 11, 2}, {30, 0, 30}};
  std::vector<int> first;
  for (const auto& s : seqs) first.insert(first.end(), s.begin(), s.end());
  model->begin_decode(B);
  std::vector<float> cached = model->decode(first, prompt);
  double worst = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<int> ids;
    for (const auto& s : seqs) ids.insert(ids.end(), s.begin(), s.end());
    const std::vector<float> full = model->last_logits(ids, B);
    std::vector<int> next;
    for (int b = 0; b < B; ++b) {
      for (int v = 0; v < V; ++v) {
        const double want = full[b * V + v];
        worst = std::max(worst, std::abs(cached[b * V + v] - want));
        ASSERT_NEAR(cached[b * V + v], want, 1e-4 * (1 + std::abs(want))) << "step " << step << " b " << b << " v " << v;
      }
      const int token = argmax(&full[b * V], V);
      ASSERT_EQ(argmax(&cached[b * V], V), token) << "step " << step << " sequence " << b;
      seqs[static_cast<std::size_t>(b)].push_back(token);
      next.push_back(token);
    }
    cached = model->decode(next, 1);
  }
  std::printf("  %d greedy steps: the same tokens; largest logit difference %.3e\n", steps, worst);
}

TEST_P(DecodeTest, APromptInPiecesEqualsThePromptWhole) {
  auto model = make_model(1);
  const std::vector<int> prompt = {1, 2, 3, 4, 5, 6, 7};
  model->begin_decode(1);
  const std::vector<float> whole = model->decode(prompt, 7);
  model->begin_decode(1);
  model->decode({1, 2, 3}, 3);
  model->decode({4}, 1);
  const std::vector<float> pieces = model->decode({5, 6, 7}, 3);
  for (std::size_t v = 0; v < whole.size(); ++v) EXPECT_NEAR(pieces[v], whole[v], 1e-4 * (1 + std::abs(whole[v])));
}

// The 16-bit copy of the weights is made at a sequence's first tokens, not at every token: weights
// set between two sequences are the second one's, bit for bit as a model built with them.
TEST_P(DecodeTest, ASequenceTakesTheWeightsAsTheyAreAtItsStartInBfloat16) {
  auto model = make_model(1, device::DType::kBF16);
  const std::vector<int> prompt = {1, 2, 3, 4};
  model->begin_decode(1);
  const std::vector<float> before = model->decode(prompt, 4);
  model->set_parameters(random_parameters(model->layout(), 6, 0.5));
  model->begin_decode(1);
  model->decode({1, 2}, 2);
  const std::vector<float> after = model->decode({3, 4}, 2);
  auto built = another_model(1, 6);
  built->begin_decode(1);
  built->decode({1, 2}, 2);
  EXPECT_EQ(after, built->decode({3, 4}, 2));
  EXPECT_NE(after, before);
}

TEST_P(DecodeTest, PositionsPastMaxSeqLenAreRefused) {
  auto model = make_model(1);
  model->begin_decode(1);
  model->decode(std::vector<int>(18, 1), 18);
  model->decode({1, 2}, 2);  // positions 18, 19: the last two
  try {
    model->decode({1}, 1);
    FAIL() << "position 20 is past MAX_SEQ_LEN = 20";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("to position 21"), std::string::npos) << e.what();
  }
  model->begin_decode(1);
  EXPECT_THROW(model->decode({99}, 1), DataError);  // outside the vocabulary
}

// plan::decode_memory, counted from the config, is what building the decode model and its first
// steps allocate on the device, byte for byte (with the unpacked GEMM: a packed one's workspaces
// are left out, as training's plan leaves them out); too many samples are refused with the most
// that fit.
TEST_P(DecodeTest, DecodeMemoryIsWhatDecodingAllocates) {
  constexpr std::size_t kSamples = 3;
  runtime_ = std::make_unique<kernels::DeviceRuntime>(*device_, cache_, device::DType::kF32, "gpu-direct");
  const std::size_t before = device_->context().bytes_allocated();
  auto model = models::build_model(*runtime_, config(), models::ModelOptions{kSamples, 0, 64u << 20, 0});
  model->set_parameters(random_parameters(model->layout(), 5, 0.5));
  model->begin_decode(kSamples);
  model->decode(std::vector<int>(kSamples * 4, 1), 4);
  model->decode(std::vector<int>(kSamples, 2), 1);
  const std::size_t used = device_->context().bytes_allocated() - before;
  const device::DeviceInfo& info = device_->info();
  const plan::DecodeSpec spec{config(), kSamples, info.base_address_align_bytes,
                              [info](std::size_t hs) { return kernels::fused_attention(info, hs); }};
  const plan::DecodeMemory m = plan::decode_memory(spec);
  EXPECT_EQ(m.total(), used) << "parameters " << m.parameters << " activations " << m.activations << " kv " << m.kv_caches;

  const double one = static_cast<double>(plan::decode_memory(plan::DecodeSpec{config(), 1, spec.base_address_align_bytes,
                                                                              spec.flash_attention}).total());
  const plan::MemoryLimits room_for_two{static_cast<double>(plan::decode_memory(plan::DecodeSpec{
                                            config(), 2, spec.base_address_align_bytes, spec.flash_attention})
                                                                .total()),
                                        0};
  const std::string msg = error_message<ConfigError>([&] { plan::require_decode_fits(spec, room_for_two, "dev"); });
  EXPECT_NE(msg.find("try --num_samples=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("decoding 3 sample(s)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  const std::string none = error_message<ConfigError>([&] { plan::require_decode_fits(spec, plan::MemoryLimits{one / 2, 0}, "dev"); });
  EXPECT_NE(none.find("not even one sample fits"), std::string::npos) << none;
  EXPECT_NO_THROW(plan::require_decode_fits(spec, plan::MemoryLimits{static_cast<double>(m.total()), 0}, "dev"));
}

INSTANTIATE_TEST_SUITE_P(Families, DecodeTest, ::testing::Values(Family::kGpt, Family::kLlama, Family::kHybrid),
                         [](const auto& p) {
                           return std::string(p.param == Family::kLlama ? "llama" : p.param == Family::kHybrid ? "hybrid_ssm" : "gpt");
                         });

}  // namespace
}  // namespace paxocl::testing
