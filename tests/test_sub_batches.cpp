// Gradient accumulation (NUM_SUB_BATCHES, models/model.h) on one device: a model built for 2
// sequences given a batch of 4 or 6 runs sub-batches whose gradients are those of the whole
// batch's weighted mean loss, against a model that holds the batch at once: loss sums equal (each
// row's loss is its own), gradients within float32 rounding, with padding weighted differently in
// each sub-batch (the mean is over the whole batch's weights, not a mean of sub-batch means); with
// rematerialization too; evaluation adds the sub-batches' sums.
#include <cmath>
#include <memory>

#include "inputs/batch.h"
#include "models/model_factory.h"
#include "tests/device_fixture.h"
#include "tests/model_configs.h"

namespace paxocl::testing {
namespace {

// Sequence 0 mostly padding, the others weighted 1 and 2: the sub-batches' weight sums differ.
inputs::Batch uneven_batch(int vocab, int B, int T, std::uint64_t seed) {
  inputs::Batch b = random_batch(vocab, B, T, seed);
  for (int i = 0; i < B * T; ++i) {
    const int sequence = i / T;
    b.weights[static_cast<std::size_t>(i)] = sequence == 0 ? (i % T == 0 ? 1.0f : 0.0f) : static_cast<float>(1 + sequence % 2);
  }
  return b;
}

class SubBatchTest : public DeviceTest {
 public:
  std::unique_ptr<models::Model> make(const models::ModelConfig& config, std::size_t max_batch,
                                      models::CheckpointPolicy policy = models::CheckpointPolicy::kSaveEverything) {
    runtimes_.push_back(std::make_unique<kernels::DeviceRuntime>(*device_, cache_, device::DType::kF32, "auto"));
    models::ModelOptions options{max_batch, 0, 64u << 20, 0};
    options.checkpoint_policy = policy;
    auto model = models::build_model(*runtimes_.back(), config, options);
    model->set_parameters(random_parameters(model->layout(), 5));
    return model;
  }
  std::vector<std::unique_ptr<kernels::DeviceRuntime>> runtimes_;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale) << "largest difference " << worst << " of gradients up to " << scale;
}

TEST_F(SubBatchTest, AccumulatedGradientsAreThoseOfTheWholeBatchsMeanLoss) {
  const models::GptConfig config = gpt_config(2, 12, 20, 3, 4, 7, 23);
  for (int B : {4, 6}) {
    SCOPED_TRACE("batch " + std::to_string(B));
    const inputs::Batch batch = uneven_batch(23, B, 7, 11);
    auto whole = make(config, static_cast<std::size_t>(B));
    const models::LossStats want = whole->train_step_gradients(batch);
    const std::vector<float> want_grads = whole->gradients();
    for (const auto policy : {models::CheckpointPolicy::kSaveEverything, models::CheckpointPolicy::kSaveNothing}) {
      auto split = make(config, 2, policy);
      const models::LossStats got = split->train_step_gradients(batch);
      EXPECT_EQ(got.weight, want.weight);
      EXPECT_NEAR(got.weighted_loss, want.weighted_loss, 1e-6 * want.weighted_loss);
      EXPECT_EQ(got.correct, want.correct);
      expect_close(split->gradients(), want_grads);
      // a second step zeroes the accumulated gradients first
      split->train_step_gradients(batch);
      expect_close(split->gradients(), want_grads);
    }
    const models::LossStats eval = make(config, 2)->evaluate(batch);
    EXPECT_NEAR(eval.weighted_loss, want.weighted_loss, 1e-6 * want.weighted_loss);
    EXPECT_EQ(eval.weight, want.weight);
  }
}

}  // namespace
}  // namespace paxocl::testing
