// The LLaMA family on an OpenCL device end to end: loss and every gradient against the float64
// reference LLaMA (tests/reference_llama.h) in float32 and, with looser bounds, in bfloat16 and
// float16; FSDP residency giving the same gradients; the Hugging Face checkpoint transformers made
// (tests/golden/llama_tiny) reproducing transformers' loss and log-probabilities on the device;
// and a few hundred steps of training lowering the loss.
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "inputs/synthetic_stream.h"
#include "models/adam_optimizer.h"
#include "models/hf_llama_io.h"
#include "models/llama_model.h"
#include "tests/device_fixture.h"
#include "tests/model_configs.h"
#include "tests/reference_llama.h"

#include "tests/golden_dir.h"

namespace paxocl::testing {
namespace {

using models::LlamaConfig;
using models::LlamaModel;

LlamaConfig tiny_config() { return tiny_llama_config(); }

class LlamaModelFixture : public DeviceTest {
 public:
  std::unique_ptr<LlamaModel> make_model(const LlamaConfig& c, std::size_t max_batch, device::DType fprop,
                                         int resident_block_slots = 0) {
    runtimes_.push_back(std::make_unique<kernels::DeviceRuntime>(*device_, cache_, fprop, "auto"));
    return std::make_unique<LlamaModel>(*runtimes_.back(), c,
                                        models::ModelOptions{max_batch, 0, 64u << 20, resident_block_slots});
  }
  std::vector<std::unique_ptr<kernels::DeviceRuntime>> runtimes_;
};
// The tests whose tolerances depend on the activation dtype run for all three.
class LlamaModelTest : public LlamaModelFixture, public ::testing::WithParamInterface<device::DType> {};

// |got - want| over the tensor, relative to the tensor's norm: 16-bit activations round every
// element, so a per-element bound would be meaningless for small gradients.
double tensor_relative_error(const std::vector<float>& got, const std::vector<double>& want, const models::TensorSpec& t) {
  double diff = 0, norm = 0;
  for (std::size_t i = t.offset; i < t.offset + t.count; ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

TEST_P(LlamaModelTest, LossAndEveryGradientMatchTheFloat64Reference) {
  const LlamaConfig c = tiny_config();
  const device::DType dtype = GetParam();
  auto model = make_model(c, 2, dtype);
  const auto params = random_parameters(model->layout(), 1);
  model->set_parameters(params);
  const inputs::Batch batch = random_batch(c.vocab_size, 2, 9, 2);
  const double loss = model->forward_backward(batch);
  const ReferenceResult ref = reference_forward_backward(
      c, model->layout(), params, ReferenceBatch{batch.batch, batch.seq_len, batch.ids, batch.targets, batch.weights});
  // Float32: the GPT's bounds. 16-bit activations: bfloat16 keeps 8 bits, float16 11.
  const double loss_tol = dtype == device::DType::kF32 ? 1e-5 : dtype == device::DType::kBF16 ? 2e-2 : 3e-3;
  const double grad_tol = dtype == device::DType::kF32 ? 1e-4 : dtype == device::DType::kBF16 ? 8e-2 : 1.5e-2;
  EXPECT_NEAR(loss, ref.loss, loss_tol * ref.loss);
  const std::vector<float> grads = model->gradients();
  for (const auto& t : model->layout().tensors()) {
    EXPECT_LT(tensor_relative_error(grads, ref.grads, t), grad_tol) << t.name;
  }
  if (dtype == device::DType::kF32) {
    for (const auto& t : model->layout().tensors()) {
      for (std::size_t i = 0; i < t.count; ++i) {
        const double got = grads[t.offset + i], want = ref.grads[t.offset + i];
        ASSERT_LE(std::abs(got - want), 2e-5 + 2e-3 * std::abs(want)) << t.name << "[" << i << "]";
      }
    }
  }
  EXPECT_NEAR(model->loss(batch), loss, 1e-6 * loss);  // the eval path, no gradients
}

// FSDP residency (block slots the scheduler fills) against full residency, the same parameters.
TEST_F(LlamaModelFixture, FsdpResidencyGivesTheSameGradients) {
  const LlamaConfig c = tiny_config();
  auto full = make_model(c, 2, device::DType::kF32);
  const auto params = random_parameters(full->layout(), 7);
  full->set_parameters(params);
  const inputs::Batch batch = random_batch(c.vocab_size, 2, 7, 8);
  const double loss = full->forward_backward(batch);
  const std::vector<float> grads = full->gradients();

  auto fsdp = make_model(c, 2, device::DType::kF32, 1);  // one slot: every block passes through it
  const models::ParameterLayout& layout = fsdp->layout();
  auto upload_unit = [&](int block) {
    const models::ParameterLayout::Unit unit = layout.unit(block);
    std::vector<float> packed(unit.size, 0.0f);
    for (std::size_t r = 0; r < unit.ranges.size(); ++r) {
      std::copy_n(params.begin() + static_cast<std::ptrdiff_t>(unit.ranges[r].offset), unit.ranges[r].count,
                  packed.begin() + static_cast<std::ptrdiff_t>(unit.packed_offsets[r]));
    }
    device_->queue().write(fsdp->unit_parameters(block), std::span<const float>(packed));
  };
  upload_unit(-1);
  models::Model::Pass pass = fsdp->begin_pass(batch, true);
  for (int l = 0; l < c.num_layers; ++l) {
    upload_unit(l);
    fsdp->forward_block(pass, l);
  }
  EXPECT_NEAR(fsdp->forward_loss(pass).mean_loss(), loss, 1e-6 * loss);
  fsdp->begin_backward(pass);
  for (int l = c.num_layers - 1; l >= 0; --l) {
    upload_unit(l);
    fsdp->backward_block(pass, l);
    const models::ParameterLayout::Unit unit = layout.unit(l);
    std::vector<float> packed(unit.size);
    device_->queue().read(fsdp->unit_gradients(l), std::span<float>(packed));
    // The slot's gradients leave (the scheduler reduce-scatters them) before the next block adds its own.
    const std::vector<float> zero(unit.size, 0.0f);
    device_->queue().write(fsdp->unit_gradients(l), std::span<const float>(zero));
    for (std::size_t r = 0; r < unit.ranges.size(); ++r) {
      for (std::size_t i = 0; i < unit.ranges[r].count; ++i) {
        ASSERT_EQ(packed[unit.packed_offsets[r] + i], grads[unit.ranges[r].offset + i]) << "block " << l;
      }
    }
  }
}

// transformers' tiny LlamaForCausalLM (tests/golden/make_golden.py) through the model on the device.
TEST_F(LlamaModelFixture, TransformersCheckpointGivesTransformersLoss) {
  const std::filesystem::path golden = golden_dir();
  std::ifstream in(golden / "llama_tiny_expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  const models::HostWeights w = models::load_hf_llama(golden / "llama_tiny", 1);
  const int B = want["batch"]["B"].get<int>(), T = want["batch"]["T"].get<int>();
  auto model = make_model(w.config.llama(), static_cast<std::size_t>(B), device::DType::kF32);
  model->load_weights(w);
  inputs::Batch batch{B, T, want["batch"]["ids"].get<std::vector<int>>(), want["batch"]["targets"].get<std::vector<int>>(),
                      std::vector<float>(static_cast<std::size_t>(B * T), 1.0f)};
  const double loss = model->loss(batch);
  std::printf("  device loss %.9f, transformers %.9f\n", loss, want["loss"].get<double>());
  EXPECT_NEAR(loss, want["loss"].get<double>(), 2e-6 * want["loss"].get<double>());
}

TEST_F(LlamaModelFixture, TrainingLowersTheLoss) {
  LlamaConfig c = tiny_config();
  c.max_seq_len = 16;
  c.vocab_size = 32;
  auto model = make_model(c, 8, device::DType::kF32);
  model->init(11);
  models::AdamOptimizer adam(model->runtime(), model->layout().total(), model->layout().decayed_end(), {});
  const inputs::SyntheticStream stream(c.vocab_size, 20000, 7);
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    const double loss = model->forward_backward(stream.batch(8, c.max_seq_len, step));
    adam.step(model->parameter_buffer(), model->gradient_buffer(), step < 10 ? 3e-3 * (step + 1) / 10 : 3e-3);
    if (step == 0) first = loss;
    if (step >= 190) last += loss / 10;
  }
  const double log_vocab = std::log(static_cast<double>(c.vocab_size));
  std::printf("  loss: step 0 %.4f, steps 190-199 mean %.4f, ln(V) %.4f\n", first, last, log_vocab);
  EXPECT_NEAR(first, log_vocab, 0.3);  // a fresh model is near uniform
  EXPECT_LT(last, 0.5 * log_vocab);
}

INSTANTIATE_TEST_SUITE_P(DTypes, LlamaModelTest,
                         ::testing::Values(device::DType::kF32, device::DType::kBF16, device::DType::kF16),
                         [](const auto& p) { return std::string(device::dtype_name(p.param)); });

}  // namespace
}  // namespace paxocl::testing
