// The float16 loss scale: halves on each overflow, doubles after growth_interval clean steps in a
// row, stays a power of two in [1, 2^24], and restores only states it could have reached.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/loss_scaler.h"

namespace paxocl::models {
namespace {

DynamicLossScaler scaler(double initial, long interval) { return DynamicLossScaler({true, initial, interval}); }

TEST(DynamicLossScaler, HalvesOnOverflowAndDoublesAfterTheIntervalOfCleanSteps) {
  DynamicLossScaler s = scaler(1024, 3);
  EXPECT_EQ(s.scale(), 1024);
  s.update(false);
  EXPECT_EQ(s.scale(), 512);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 512) << "two clean steps of three";
  s.update(false);  // an overflow restarts the count
  EXPECT_EQ(s.scale(), 256);
  for (int i = 0; i < 3; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.state().clean_steps, 0);
  for (int i = 0; i < 3; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.overflows(), 2);
}

TEST(DynamicLossScaler, StaysWithinOneAndTwoToTheTwentyFour) {
  DynamicLossScaler low = scaler(2, 1000);
  for (int i = 0; i < 5; ++i) low.update(false);
  EXPECT_EQ(low.scale(), DynamicLossScaler::kMinScale);
  DynamicLossScaler high = scaler(DynamicLossScaler::kMaxScale / 2, 1);
  for (int i = 0; i < 5; ++i) high.update(true);
  EXPECT_EQ(high.scale(), DynamicLossScaler::kMaxScale);
}

TEST(DynamicLossScaler, DisabledKeepsScaleOneWhateverHappens) {
  DynamicLossScaler s({false, 65536, 1});
  s.update(false);
  s.update(true);
  s.restore({4096, 3});
  EXPECT_EQ(s.scale(), 1);
  EXPECT_EQ(s.overflows(), 0);
}

TEST(DynamicLossScaler, RestoresAReachableStateAndContinuesFromIt) {
  DynamicLossScaler s = scaler(65536, 4);
  s.restore({2048, 3});
  s.update(true);  // the fourth clean step
  EXPECT_EQ(s.scale(), 4096);
  for (const LossScaleState bad : {LossScaleState{3000, 0}, LossScaleState{0.5, 0}, LossScaleState{1 << 25, 0},
                                   LossScaleState{1024, -1}}) {
    EXPECT_THROW(s.restore(bad), ConfigError) << bad.scale << " after " << bad.clean_steps;
  }
}

TEST(DynamicLossScaler, BadSettingsAreConfigErrorsNamingTheKnob) {
  try {
    scaler(1000, 10);
    FAIL() << "1000 is not a power of two";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("LOSS_SCALE_INITIAL=1000"), std::string::npos) << e.what();
  }
  try {
    scaler(1024, 0);
    FAIL() << "interval 0";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("LOSS_SCALE_GROWTH_INTERVAL=0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paxocl::models
