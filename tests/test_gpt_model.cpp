// The GPT on an OpenCL device end to end: loss and every gradient against the float64 reference,
// finite differences of the fp32 model over every parameter tensor, training on a synthetic
// stream, bitwise reproducibility, the optimizer and schedule, weight files through the model,
// and mixed precision (bfloat16 / float16 activations) against the same reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>

#include "inputs/synthetic_stream.h"
#include "models/adam_optimizer.h"
#include "models/gpt_model.h"
#include "models/lr_schedule.h"
#include "models/weights_io.h"
#include "tests/device_fixture.h"
#include "tests/model_configs.h"
#include "tests/reference_gpt.h"

namespace paxocl::testing {
namespace {

using models::GptConfig;
using models::GptModel;


GptConfig tiny_config() { return gpt_config(2, 12, 20, 3, 4, 7, 23); }  // vocabulary padded to 128

// The tiny GPT with praxis's SSM in place of attention in `kinds` (BLOCK_KINDS), its convolution
// through clFFT or the direct kernel; dt = 0.1 so the convolution carries weight at T = 6.
GptConfig tiny_ssm_config(std::vector<models::BlockKind> kinds, const std::string& convolution = "fft",
                          int layers = 2) {
  GptConfig c = gpt_config(layers, 12, 20, 3, 4, 7, 23);
  c.block_kinds = std::move(kinds);
  c.ssm.state_size = 5;
  c.ssm.step_size = 0.1f;
  c.ssm.convolution = convolution;
  return c;
}
GptConfig tiny_hybrid_config(const std::string& convolution = "fft") {
  return tiny_ssm_config({models::BlockKind::kAttention, models::BlockKind::kSsm}, convolution);
}

inputs::Batch random_batch(const GptConfig& c, int B, int T, std::uint64_t seed) {
  return testing::random_batch(c.vocab_size, B, T, seed);
}

ReferenceBatch to_reference(const inputs::Batch& b) { return ReferenceBatch{b.batch, b.seq_len, b.ids, b.targets, b.weights}; }

class GptModelTest : public DeviceTest {
 public:
  // A model on a runtime of its own (kept by the fixture) for the GEMM policy and dtype.
  std::unique_ptr<GptModel> make_model(const GptConfig& c, std::size_t max_batch, const std::string& gemm = "auto",
                                       device::DType fprop = device::DType::kF32, int resident_block_slots = 0) {
    return std::make_unique<GptModel>(runtime(gemm, fprop), c,
                                      models::ModelOptions{max_batch, 0, 64u << 20, resident_block_slots});
  }
  kernels::DeviceRuntime& runtime(const std::string& gemm = "auto", device::DType fprop = device::DType::kF32) {
    runtimes_.push_back(std::make_unique<kernels::DeviceRuntime>(*device_, cache_, fprop, gemm));
    return *runtimes_.back();
  }
  std::vector<std::unique_ptr<kernels::DeviceRuntime>> runtimes_;
};

void expect_loss_and_every_gradient_match_the_reference(GptModelTest& test, const GptConfig& c,
                                                        const std::string& gemm = "auto") {
  auto model = test.make_model(c, 2, gemm);
  const auto params = random_parameters(model->layout(), 1);
  model->set_parameters(params);
  const inputs::Batch batch = random_batch(c, 2, 6, 2);
  const double loss = model->forward_backward(batch);
  const ReferenceResult ref = reference_forward_backward(c, model->layout(), params, to_reference(batch));
  EXPECT_NEAR(loss, ref.loss, 1e-5 * ref.loss);
  const std::vector<float> grads = model->gradients();
  for (const auto& t : model->layout().tensors()) {
    for (std::size_t i = 0; i < t.count; ++i) {
      const double got = grads[t.offset + i], want = ref.grads[t.offset + i];
      ASSERT_LE(std::abs(got - want), 2e-5 + 2e-3 * std::abs(want)) << t.name << "[" << i << "]";
    }
  }
  // The eval path gives the same loss without touching gradients.
  EXPECT_NEAR(model->loss(batch), loss, 1e-6 * loss);
}

TEST_F(GptModelTest, LossAndEveryGradientMatchTheFloat64Reference) {
  expect_loss_and_every_gradient_match_the_reference(*this, tiny_config());
  // The direct GEMM adds Linear's bias and GELU in its epilogue (GemmEpilogue): the backward then
  // reads the pre-activation it stored.
  expect_loss_and_every_gradient_match_the_reference(*this, tiny_config(), "gpu-direct");
}

// praxis's SSMTransformer blocks (every block the SSM) and a hybrid, with either convolution.
TEST_F(GptModelTest, SsmAndHybridModelsMatchTheFloat64Reference) {
  for (const std::string convolution : {"fft", "direct"}) {
    SCOPED_TRACE(convolution);
    expect_loss_and_every_gradient_match_the_reference(*this, tiny_hybrid_config(convolution));
    expect_loss_and_every_gradient_match_the_reference(*this, tiny_ssm_config({models::BlockKind::kSsm}, convolution));
  }
}

TEST_F(GptModelTest, FiniteDifferencesCoverEveryParameterTensor) {
  for (const GptConfig& c : {tiny_config(), tiny_hybrid_config()}) {
    SCOPED_TRACE(c.describe());
    auto model = make_model(c, 2);
    std::vector<float> params = random_parameters(model->layout(), 3);
    model->set_parameters(params);
    const inputs::Batch batch = random_batch(c, 2, 5, 4);
    model->forward_backward(batch);
    const std::vector<float> grads = model->gradients();
    Rng pick(5);
    const double h = 1e-2;
    for (const auto& t : model->layout().tensors()) {
      // The coordinate with the largest gradient, plus two random ones.
      std::size_t largest = 0;
      for (std::size_t i = 1; i < t.count; ++i) {
        if (std::abs(grads[t.offset + i]) > std::abs(grads[t.offset + largest])) largest = i;
      }
      for (std::size_t i : {largest, static_cast<std::size_t>(pick.next_u64() % t.count),
                            static_cast<std::size_t>(pick.next_u64() % t.count)}) {
        const std::size_t at = t.offset + i;
        const float saved = params[at];
        params[at] = saved + static_cast<float>(h);
        model->set_parameters(params);
        const double up = model->loss(batch);
        params[at] = saved - static_cast<float>(h);
        model->set_parameters(params);
        const double down = model->loss(batch);
        params[at] = saved;
        const double fd = (up - down) / (2 * h), g = grads[at];
        EXPECT_LE(std::abs(fd - g), 5e-4 + 2e-2 * std::abs(g)) << t.name << "[" << i << "] fd " << fd << " analytic " << g;
      }
    }
  }
}

GptConfig small_config() { return gpt_config(2, 32, 128, 4, 8, 32, 61); }

// Runs `steps` training steps from `seed`; returns the losses.
std::vector<double> train(GptModelTest& t, const GptConfig& c, int steps, std::uint64_t seed,
                          const std::string& gemm = "auto") {
  auto model = t.make_model(c, 8, gemm);
  model->init(seed);
  models::AdamOptimizer adam(model->runtime(), model->layout().total(), model->layout().decayed_end(), {});
  const models::LrSchedule lr{3e-3, 10, 10, 400, 0.1};
  const inputs::SyntheticStream stream(c.vocab_size, 20000, 7);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    losses.push_back(model->forward_backward(stream.batch(8, c.max_seq_len, step)));
    adam.step(model->parameter_buffer(), model->gradient_buffer(), lr.at(step));
  }
  return losses;
}

TEST_F(GptModelTest, TwoHundredStepsDriveTheLossWellBelowLogVocab) {
  const GptConfig c = small_config();
  const std::vector<double> losses = train(*this, c, 200, 11);
  const double log_vocab = std::log(static_cast<double>(c.vocab_size));
  EXPECT_NEAR(losses.front(), log_vocab, 0.3);  // a fresh model is near uniform
  double tail = 0;
  for (int i = 190; i < 200; ++i) tail += losses[static_cast<std::size_t>(i)] / 10;
  EXPECT_LT(tail, 0.5 * log_vocab) << "first " << losses.front() << " last " << losses.back();
  std::printf("loss: step 0 %.4f, steps 190-199 mean %.4f, ln(V) %.4f\n", losses.front(), tail, log_vocab);
}

TEST_F(GptModelTest, SameSeedGivesBitwiseIdenticalLosses) {
  const GptConfig c = small_config();
  const std::vector<double> a = train(*this, c, 6, 21), b = train(*this, c, 6, 21);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
  const std::vector<double> other = train(*this, c, 1, 22);
  EXPECT_NE(other[0], a[0]) << "a different seed must give a different model";
}

TEST_F(GptModelTest, EveryGemmPathGivesTheSameLossCurve) {
  const GptConfig c = small_config();
  const std::vector<double> reference = train(*this, c, 8, 31, "cpu-8x48");
  for (const char* gemm : {"cpu-12x32", "gpu-64x64", "clblast", "gpu-direct"}) {
    const std::vector<double> losses = train(*this, c, 8, 31, gemm);
    for (std::size_t i = 0; i < losses.size(); ++i) {
      EXPECT_NEAR(losses[i], reference[i], 1e-4 * reference[i]) << gemm << " step " << i;
    }
  }
}

TEST_F(GptModelTest, OptimizerMatchesPraxisAdamWithClippingAndDecayOnMatricesOnly) {
  const GptConfig c = tiny_config();
  auto model = make_model(c, 1);
  const auto& layout = model->layout();
  const std::size_t n = layout.total();
  std::vector<double> p(n, 0.0), g(n, 0.0);
  {
    const auto params = random_parameters(layout, 31), grads = random_parameters(layout, 32);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = params[i];
      g[i] = grads[i];
    }
  }
  auto pb = upload(p), gb = upload(g);
  models::AdamConfig cfg;
  cfg.clip_gradient_norm = 1.0;
  models::AdamOptimizer adam(model->runtime(), n, layout.decayed_end(), cfg);
  std::vector<double> m(n, 0.0), v(n, 0.0);
  for (int step = 1; step <= 3; ++step) {
    const double lr = 1e-2;
    const auto stats = adam.step(pb, gb, lr);
    ASSERT_TRUE(stats.applied);
    double norm = 0;
    for (double x : g) norm += x * x;
    norm = std::sqrt(norm);
    EXPECT_NEAR(stats.grad_norm, norm, 1e-5 * norm);
    const double scale = norm > 1.0 ? 1.0 / norm : 1.0;
    EXPECT_NEAR(stats.grad_scale, scale, 1e-6);
    auto decay = [step](double beta) { return beta * (1 - std::pow(beta, step - 1)) / (1 - std::pow(beta, step)); };
    const double d1 = decay(0.9), d2 = decay(0.95);
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = g[i] * scale;
      m[i] = d1 * m[i] + (1 - d1) * gi;
      v[i] = d2 * v[i] + (1 - d2) * gi * gi;
      const double wd = i < layout.decayed_end() ? 0.1 : 0.0;
      p[i] -= lr * (m[i] / (std::sqrt(v[i]) + 1e-8) + wd * p[i]);
    }
  }
  expect_close(download(pb, n), p, 2e-5, 1e-4, "params after 3 Adam steps");
  EXPECT_EQ(adam.steps_applied(), 3);
}

TEST_F(GptModelTest, NonFiniteGradientsSkipTheStep) {
  const std::size_t n = 1000;
  auto p = random(n, 41);
  auto g = random(n, 42);
  g[17] = std::numeric_limits<double>::quiet_NaN();
  auto pb = upload(p), gb = upload(g);
  models::AdamOptimizer adam(runtime(), n, 500, {});
  const auto stats = adam.step(pb, gb, 1e-3);
  EXPECT_FALSE(stats.applied);
  EXPECT_EQ(adam.steps_skipped(), 1);
  EXPECT_EQ(adam.steps_applied(), 0);
  EXPECT_EQ(download(pb, n), p) << "a skipped step must not touch the parameters";
}

// A checkpoint's moments go in only at the optimizer's size, each of the two checked.
TEST_F(GptModelTest, OptimizerStateOfAnotherSizeIsRefused) {
  models::AdamOptimizer adam(runtime(), 10, 5, {});
  const std::vector<float> right(10, 0.5f), wrong(9, 0.5f);
  EXPECT_THROW(adam.load_state(wrong, right, 3, 1), std::logic_error);
  EXPECT_THROW(adam.load_state(right, wrong, 3, 1), std::logic_error);
  EXPECT_EQ(adam.steps_applied(), 0);
  adam.load_state(right, std::vector<float>(10, 0.25f), 3, 1);
  EXPECT_EQ(download(adam.first_moment(), 10), std::vector<double>(10, 0.5));
  EXPECT_EQ(download(adam.second_moment(), 10), std::vector<double>(10, 0.25));
  EXPECT_EQ(adam.steps_applied(), 3);
  EXPECT_EQ(adam.steps_skipped(), 1);
}

// A gradient whose norm is below the clip norm is applied as it is: the same step as without
// clipping, bit for bit, and grad_scale 1.
TEST_F(GptModelTest, GradientsBelowTheClipNormAreNotScaled) {
  const std::size_t n = 256;
  const auto p = random(n, 53), g = random(n, 54, 0.01);  // norm ~0.16
  models::AdamConfig clipped, unclipped;
  clipped.clip_gradient_norm = 1.0;
  unclipped.clip_gradient_norm = 0;
  auto pc = upload(p), gc = upload(g), pu = upload(p), gu = upload(g);
  models::AdamOptimizer with_clip(runtime(), n, n / 2, clipped), without(runtime(), n, n / 2, unclipped);
  for (int step = 0; step < 2; ++step) {
    const auto stats = with_clip.step(pc, gc, 1e-2);
    without.step(pu, gu, 1e-2);
    ASSERT_LT(stats.grad_norm, 1.0);
    EXPECT_EQ(stats.grad_scale, 1.0);
  }
  EXPECT_EQ(download(pc, n), download(pu, n));
}

// FSDP's sharded step (Pax's sharded_adam): the norm is the whole job's, from the counted shards'
// squares summed by the all-reduce, so the shards move as one optimizer over the whole buffer
// would; a replica shard (not counted) adds nothing to the norm and moves like its original.
TEST_F(GptModelTest, ShardedAdamStepUsesTheNormOfTheCountedShards) {
  const std::size_t n = 1024, cut = 512, decayed = 256;  // segment views start on 1 KiB boundaries
  const auto p = random(n, 51), g = random(n, 52, 0.01);  // norm ~0.32
  models::AdamConfig cfg;
  cfg.clip_gradient_norm = 0.2;  // clipped: the update depends on the norm
  auto pw = upload(p), gw = upload(g);
  models::AdamOptimizer whole(runtime(), n, decayed, cfg);
  const auto want = whole.step(pw, gw, 1e-2);
  double norm = 0;
  for (double x : g) norm += x * x;
  norm = std::sqrt(norm);
  ASSERT_NEAR(want.grad_norm, norm, 1e-6 * norm);

  const std::vector<double> p0(p.begin(), p.begin() + cut), p1(p.begin() + cut, p.end());
  const std::vector<double> g0(g.begin(), g.begin() + cut), g1(g.begin() + cut, g.end());
  auto pb0 = upload(p0), gb0 = upload(g0), pb1 = upload(p1), gb1 = upload(g1), pr = upload(p1), gr = upload(g1);
  models::AdamOptimizer a0(runtime(), cut, decayed, cfg), a1(runtime(), n - cut, 0, cfg), ar(runtime(), n - cut, 0, cfg);
  const std::vector<models::AdamShard> shards = {{&a0, &pb0, &gb0, true}, {&a1, &pb1, &gb1, true}, {&ar, &pr, &gr, false}};
  int reductions = 0;
  const auto stats = models::sharded_adam_step(shards, 1e-2, 1.0, [&](std::vector<double>& sums) {
    ++reductions;
    ASSERT_EQ(sums.size(), 1u);  // one process: the sum is already the job's
  });
  EXPECT_EQ(reductions, 1);
  EXPECT_TRUE(stats.applied);
  EXPECT_NEAR(stats.grad_norm, norm, 1e-6 * norm);
  EXPECT_NEAR(stats.grad_scale, want.grad_scale, 1e-6 * want.grad_scale);
  std::vector<double> got = download(pb0, cut);
  const std::vector<double> second = download(pb1, n - cut);
  got.insert(got.end(), second.begin(), second.end());
  expect_close(got, download(pw, n), 1e-7, 1e-6, "sharded step vs one optimizer");
  EXPECT_EQ(download(pr, n - cut), second) << "the replica moves exactly like the shard it copies";
}

// Gradient buckets: the ranges of blocks first..last hold exactly those blocks' tensors, in two
// contiguous runs at most (matrices, vectors; they join when all blocks are taken), with or without alignment padding between tensors.
TEST(ParameterLayout, RangesOfBlocksHoldExactlyThoseBlocks) {
  const GptConfig c = gpt_config(3, 12, 20, 3, 4, 7, 23);
  for (std::size_t alignment : {1u, 16u}) {
    const models::ParameterLayout layout(c, alignment);
    for (int first = 0; first < c.num_layers; ++first) {
      for (int last = first; last < c.num_layers; ++last) {
        const auto ranges = layout.ranges_of_blocks(first, last);
        EXPECT_LE(ranges.size(), 2u);
        for (const models::TensorSpec& t : layout.tensors()) {
          int layer = -1;
          if (t.name[0] == 'h') layer = std::stoi(t.name.substr(1));
          const bool inside = std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) {
            return t.offset >= r.offset && t.offset + t.count <= r.offset + r.count;
          });
          EXPECT_EQ(inside, layer >= first && layer <= last) << t.name << " blocks " << first << ".." << last;
        }
      }
    }
  }
}

TEST(LrSchedule, LinearRampupThenCosineDecayToTheMinimumRatio) {
  const models::LrSchedule s{1e-3, 10, 20, 120, 0.1};
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(5), 0.5e-3);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(19), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(20), 1e-3);
  EXPECT_NEAR(s.at(70), 1e-3 * (0.1 + 0.9 * 0.5), 1e-15);  // halfway: cos = 0
  EXPECT_NEAR(s.at(120), 1e-4, 1e-15);
  EXPECT_NEAR(s.at(100000), 1e-4, 1e-15);
  EXPECT_THROW((models::LrSchedule{1e-3, 30, 20, 120, 0.1}.validate()), ConfigError);
  // LEARNING_RATE must be >= 0: 0 (e.g. to evaluate through the training loop) is allowed.
  EXPECT_NO_THROW((models::LrSchedule{0.0, 10, 20, 120, 0.1}.validate()));
  EXPECT_EQ((models::LrSchedule{0.0, 10, 20, 120, 0.1}.at(15)), 0.0);
  EXPECT_THROW((models::LrSchedule{-1e-3, 10, 20, 120, 0.1}.validate()), ConfigError);
}

TEST_F(GptModelTest, BadBatchesAreDataErrors) {
  const GptConfig c = tiny_config();
  auto model = make_model(c, 2);
  inputs::Batch b = random_batch(c, 2, 5, 51);
  b.ids[3] = c.vocab_size;
  try {
    model->loss(b);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the vocabulary [0, 23)"), std::string::npos) << e.what();
  }
  // more rows than built for in one pass (Model::evaluate runs such a batch as sub-batches)
  EXPECT_THROW(model->begin_pass(random_batch(c, 3, 5, 52), false), DataError);
  EXPECT_THROW(model->loss(random_batch(c, 1, 8, 53)), DataError);  // longer than MAX_SEQ_LEN
}

TEST_F(GptModelTest, WeightFilesRoundTripThroughTheModel) {
  const GptConfig c = gpt_config(2, 16, 64, 2, 8, 9, 50);  // llm.c's shape rules: HIDDEN = 4 C, NH * hs = C
  auto model = make_model(c, 1);
  model->set_parameters(random_parameters(model->layout(), 61));
  TempDir dir;
  const auto llmc = dir.path() / "model.bin", again = dir.path() / "again.bin", st = dir.path() / "model.safetensors";
  models::save_llmc(llmc, model->save_weights());
  auto reloaded = make_model(c, 1);
  reloaded->load_weights(models::load_llmc(llmc, 1));
  EXPECT_EQ(reloaded->parameters(), model->parameters());
  models::save_llmc(again, reloaded->save_weights());
  auto bytes = [](const std::filesystem::path& f) {
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(bytes(again), bytes(llmc)) << "llm.c file -> model -> file must give identical bytes";

  models::save_safetensors(st, model->save_weights());
  auto from_st = make_model(c, 1);
  from_st->load_weights(models::load_safetensors(st, c.num_heads, 1));
  const inputs::Batch batch = random_batch(c, 1, 9, 62);
  EXPECT_EQ(from_st->loss(batch), model->loss(batch));

  GptConfig other = c;
  other.num_layers = 3;
  auto wrong = make_model(other, 1);
  EXPECT_THROW(wrong->load_weights(models::load_llmc(llmc, 1)), ConfigError);
}

// ---------------------------------------------------------------------------------------------
// Mixed precision (FPROP_DTYPE bfloat16 / float16): activations and the weights as read in 16
// bits, parameters, gradients and every sum in float32.
class GptModelMixedPrecisionTest : public GptModelTest, public ::testing::WithParamInterface<device::DType> {};

// ||got - want||_2 / ||want||_2 over one tensor of the flat layout.
double relative_error(const std::vector<float>& got, const std::vector<double>& want, const models::TensorSpec& t) {
  double diff = 0, norm = 0;
  for (std::size_t i = t.offset; i < t.offset + t.count; ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

// The error of a 16-bit network, norm-wise relative (per gradient tensor, and of the loss).
// Each 16-bit rounding perturbs what it stores by a relative error of at most u
// (dtype_unit_roundoff: 2^-8 bfloat16, 2^-11 float16); every GEMM and reduction is float32, whose
// error is ~1e-6 and negligible here. The roundings between the input and a gradient:
//   per block, forward: LN1 out, qkv, + bias, attention out, proj, + bias, residual sum, LN2
//     out, fc, + bias, GELU, fc proj, + bias, residual sum                                  14
//   per block, backward: fc proj dx, GELU dz, fc dx, LN2 dx, proj dx, dqkv, qkv dx, LN1 dx    8
//   per block, its weights as read: 4 matrices, 4 biases, 2 LayerNorm scales and biases     12
//   outside the blocks: embedding out, wte, wpe, LNf scale and bias, LNf out, logits,
//     dlogits, dy, LNf dx                                                                   10
// so K = 34 L + 10 roundings (78 for L = 2). With gain about one from each to the result (the
// pre-LayerNorm network re-normalises every block; true of these random, well-scaled models, not
// a theorem) the first-order worst case is K u, 0.3 for bfloat16: true but too loose to catch
// anything. Rounding to nearest errs by a zero-mean amount spread over at most +-u relative, so
// the K errors are uncorrelated with standard deviation at most u / sqrt(3) each, and their sum
// has standard deviation sqrt(K / 3) u; the tolerance allows three: sqrt(3 K) u, 15.3 u for
// L = 2, i.e. ~ 11 u per block. Measured on these configurations: gradients up to 7.4 u
// (bfloat16) and 5.1 u (float16), the loss 0.2 u (its per-token errors average out).
double mixed_precision_tolerance(const GptConfig& c, device::DType dtype) {
  const double roundings = 34.0 * c.num_layers + 10.0;
  return std::sqrt(3.0 * roundings) * device::dtype_unit_roundoff(dtype);
}

TEST_P(GptModelMixedPrecisionTest, LossAndGradientsMatchTheFloat64Reference) {
  const device::DType dtype = GetParam();
  const double u = device::dtype_unit_roundoff(dtype);
  // tiny: dimensions below one 16-wide vector; small: whole vectors (the CPU kernels' main loops).
  for (const GptConfig& c : {tiny_config(), small_config(), tiny_hybrid_config()}) {
    SCOPED_TRACE(c.describe());
    auto model = make_model(c, 2, "auto", dtype);
    const auto params = random_parameters(model->layout(), 1);
    model->set_parameters(params);
    const inputs::Batch batch = random_batch(c, 2, 6, 2);
    const double loss = model->forward_backward(batch);
    // The reference takes the float32 master parameters: rounding the weights is part of the error.
    const ReferenceResult ref = reference_forward_backward(c, model->layout(), params, to_reference(batch));
    const double tol = mixed_precision_tolerance(c, dtype);
    EXPECT_LE(std::abs(loss - ref.loss), tol * ref.loss) << "loss " << loss << " want " << ref.loss;
    const std::vector<float> grads = model->gradients();
    double worst = 0;
    for (const auto& t : model->layout().tensors()) {
      const double e = relative_error(grads, ref.grads, t);
      EXPECT_LE(e, tol) << t.name << ": relative error " << e / u << " u";
      worst = std::max(worst, e);
    }
    // 16 bits cannot be as exact as float32 (~1e-6): guards against a silent float32 fallback.
    EXPECT_GT(worst, u / 2);
    std::printf("%s L=%d C=%d: loss error %.2f u, worst gradient tensor %.2f u, tolerance %.1f u\n",
                std::string(device::dtype_name(dtype)).c_str(), c.num_layers, c.model_dims,
                std::abs(loss - ref.loss) / ref.loss / u, worst / u, tol / u);
    // The eval path computes the same forward.
    EXPECT_EQ(model->loss(batch), loss);
  }
}

// The step reads the weights from a 16-bit copy: the float32 master parameters stay as they are
// (bit for bit), and the copy holds each parameter rounded once.
TEST_P(GptModelMixedPrecisionTest, MasterParametersStayFloat32AndTheCopyIsTheirRounding) {
  const device::DType dtype = GetParam();
  const GptConfig c = tiny_config();
  auto model = make_model(c, 2, "auto", dtype);
  const auto params = random_parameters(model->layout(), 7);
  model->set_parameters(params);
  const inputs::Batch batch = random_batch(c, 2, 6, 8);
  model->loss(batch);
  EXPECT_EQ(model->parameters(), params) << "a forward pass changed the float32 parameters";
  model->forward_backward(batch);
  EXPECT_EQ(model->parameters(), params) << "a forward and backward pass changed the float32 parameters";
  ASSERT_EQ(model->compute_buffer().dtype(), dtype);
  const std::vector<float> copy = model->compute_buffer().read(device_->queue());
  ASSERT_EQ(copy.size(), params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(copy[i], device::round_to(dtype, params[i])) << "parameter " << i;
  }
}

// FSDP residency: the model holds block slots, filled here as the FSDP scheduler does (a unit
// image written before its block runs; with two slots the next block's is written ahead, as
// prefetching does, while the current one still runs from its own slot); the block's 16-bit
// weights must be cast from its slot each time, so loss and gradients equal full residency's bit
// for bit.
TEST_P(GptModelMixedPrecisionTest, FsdpResidencyCastsEachBlockWhenItRuns) {
  const device::DType dtype = GetParam();
  // A hybrid's SSM and attention blocks have units of different sizes sharing the slots.
  using models::BlockKind;
  for (const GptConfig& c : {gpt_config(3, 12, 20, 3, 4, 7, 23),
                             tiny_ssm_config({BlockKind::kSsm, BlockKind::kAttention, BlockKind::kSsm}, "fft", 3)}) {
    SCOPED_TRACE(c.describe());
    auto full = make_model(c, 2, "auto", dtype);
    const models::ParameterLayout& layout = full->layout();
    const auto params = random_parameters(layout, 9);
    full->set_parameters(params);
    const inputs::Batch batch = random_batch(c, 2, 6, 10);
    const double want_loss = full->forward_backward(batch);
    const std::vector<float> want_grads = full->gradients();

    for (int slots : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << slots << " slot(s)");
      auto fsdp = make_model(c, 2, "auto", dtype, slots);
      auto& queue = device_->queue();
      auto fill_unit = [&](int block) {
        std::vector<float> image(layout.unit(block).size, 0.0f);
        for (const models::TensorSpec& t : layout.tensors()) {
          if (models::ParameterLayout::block_of(t) != block) continue;
          std::copy_n(params.begin() + static_cast<std::ptrdiff_t>(t.offset), t.count,
                      image.begin() + static_cast<std::ptrdiff_t>(layout.packed_offset(t)));
        }
        queue.write(fsdp->unit_parameters(block), std::span<const float>(image));
      };
      std::vector<float> grads(layout.total(), 0.0f);
      auto take_gradients = [&](int block) {
        std::vector<float> image(layout.unit(block).size);
        queue.read(fsdp->unit_gradients(block), std::span<float>(image));
        for (const models::TensorSpec& t : layout.tensors()) {
          if (models::ParameterLayout::block_of(t) != block) continue;
          std::copy_n(image.begin() + static_cast<std::ptrdiff_t>(layout.packed_offset(t)), t.count,
                      grads.begin() + static_cast<std::ptrdiff_t>(t.offset));
        }
        models::FloatBuffer slot = fsdp->unit_gradients(block);
        fsdp->runtime().kernels().elementwise.fill(slot, 0.0f);  // a later block accumulates into the same slot
      };
      fill_unit(-1);
      GptModel::Pass pass = fsdp->begin_pass(batch, true);
      int next = 0;  // the next block to write: up to slots - 1 ahead of the one that runs
      for (int l = 0; l < c.num_layers; ++l) {
        while (next <= std::min(l + slots - 1, c.num_layers - 1)) fill_unit(next++);
        fsdp->forward_block(pass, l);
      }
      const double loss = fsdp->forward_loss(pass).mean_loss();
      fsdp->begin_backward(pass);
      next = c.num_layers - 1;
      for (int l = c.num_layers - 1; l >= 0; --l) {
        while (next >= std::max(l - slots + 1, 0)) fill_unit(next--);
        fsdp->backward_block(pass, l);
        take_gradients(l);
      }
      fsdp->finish_backward(pass);
      take_gradients(-1);
      EXPECT_EQ(loss, want_loss);
      for (const models::TensorSpec& t : layout.tensors()) {
        for (std::size_t i = t.offset; i < t.offset + t.count; ++i) ASSERT_EQ(grads[i], want_grads[i]) << t.name;
      }
    }
  }
}

// Loss scaling (models/loss_scaler.h): with a power-of-two scale S the backward produces S x the
// gradients. In float32 and bfloat16 (float32's exponent range) every rounding scales with them,
// so they are S x the unscaled ones bit for bit; in float16 small ones keep bits the unscaled pass
// loses to underflow, so there they are held to the float64 reference instead.
TEST_F(GptModelTest, APowerOfTwoLossScaleScalesEveryGradientExactly) {
  const GptConfig c = tiny_config();
  const float scale = 1024.0f;
  for (const device::DType dtype : {device::DType::kF32, device::DType::kBF16, device::DType::kF16}) {
    SCOPED_TRACE(device::dtype_name(dtype));
    auto model = make_model(c, 2, "auto", dtype);
    const auto params = random_parameters(model->layout(), 3);
    model->set_parameters(params);
    const inputs::Batch batch = random_batch(c, 2, 6, 4);
    const double loss = model->forward_backward(batch);
    const std::vector<float> unscaled = model->gradients();
    model->set_loss_scale(scale);
    EXPECT_EQ(model->forward_backward(batch), loss) << "the loss itself is not scaled";
    const std::vector<float> scaled = model->gradients();
    if (dtype != device::DType::kF16) {
      for (std::size_t i = 0; i < scaled.size(); ++i) ASSERT_EQ(scaled[i], scale * unscaled[i]) << "element " << i;
      continue;
    }
    const ReferenceResult ref = reference_forward_backward(c, model->layout(), params, to_reference(batch));
    std::vector<float> unscaled_back(scaled.size());
    for (std::size_t i = 0; i < scaled.size(); ++i) unscaled_back[i] = scaled[i] / scale;
    for (const auto& t : model->layout().tensors()) {
      EXPECT_LE(relative_error(unscaled_back, ref.grads, t), mixed_precision_tolerance(c, dtype)) << t.name;
    }
  }
}

// The optimizer divides the loss scale out exactly: S x the gradients at loss scale S (clipped or
// not) update the parameters and moments bit for bit as the gradients at scale 1.
TEST_F(GptModelTest, TheOptimizerDividesTheLossScaleOutExactly) {
  const std::size_t n = 1000;
  const auto p = random(n, 51), g = random(n, 52);
  kernels::DeviceRuntime& rt = runtime();
  for (const double clip : {0.0, 0.5}) {  // random(n) has norm ~ sqrt(n / 3) >> 0.5: clipped
    SCOPED_TRACE(clip);
    models::AdamConfig config;
    config.clip_gradient_norm = clip;
    auto run = [&](double loss_scale) {
      std::vector<double> scaled(g);
      for (double& x : scaled) x *= loss_scale;
      auto pb = upload(p), gb = upload(scaled);
      models::AdamOptimizer adam(rt, n, 512, config);  // an aligned split: two views
      models::OptimizerStepStats stats;
      for (int step = 0; step < 3; ++step) stats = adam.step(pb, gb, 1e-3, loss_scale);
      EXPECT_TRUE(stats.applied);
      return std::make_pair(download(pb, n), stats);
    };
    const auto [want, want_stats] = run(1.0);
    const auto [got, got_stats] = run(65536.0);
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_stats.grad_norm, want_stats.grad_norm) << "the norm is reported unscaled";
    EXPECT_EQ(got_stats.grad_scale, want_stats.grad_scale);
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, GptModelMixedPrecisionTest,
                         ::testing::Values(device::DType::kBF16, device::DType::kF16),
                         [](const ::testing::TestParamInfo<device::DType>& param_info) {
                           return std::string(device::dtype_name(param_info.param));
                         });

// CLBlast multiplies float32 only: a 16-bit model cannot be built on it.
TEST_F(GptModelTest, SixteenBitsWithTheClBlastGemmIsAConfigError) {
  try {
    make_model(tiny_config(), 1, "clblast", device::DType::kBF16);
    FAIL() << "a bfloat16 model was built on CLBlast";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paxocl::testing
