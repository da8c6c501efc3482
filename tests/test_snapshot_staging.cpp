// SnapshotStaging and PinnedHostMemory on an OpenCL device: device data copied into the staged
// regions arrives intact at the offsets asked for, a region is reused from save to save once no
// slice views it, and a region still viewed (a write in flight) is never handed out again.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "device/pinned_host_memory.h"
#include "scheduler/snapshot_staging.h"
#include "tests/device_fixture.h"

namespace paxocl::testing {
namespace {

class SnapshotStagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto selected = test_device_selection();
    ASSERT_FALSE(selected.empty());
    device_ = std::make_unique<device::Device>(selected.front());
  }
  // A device buffer holding first, first + 1, ... (`count` floats).
  device::Buffer<float> iota_buffer(std::size_t count, float first) {
    std::vector<float> host(count);
    std::iota(host.begin(), host.end(), first);
    device::Buffer<float> b(device_->context(), count, "test.iota");
    device_->queue().write(b, std::span<const float>(host));
    return b;
  }
  // Copies three iota buffers (first, first + 1e6, first + 2e6) into `region`, as a snapshot does.
  void stage(const scheduler::SnapshotStaging::Region& region, std::size_t count, float first) {
    device_->queue().read(iota_buffer(count, first), region.params);
    device_->queue().read(iota_buffer(count, first + 1e6f), region.m);
    device_->queue().read(iota_buffer(count, first + 2e6f), region.v);
  }
  std::unique_ptr<device::Device> device_;
};

TEST_F(SnapshotStagingTest, PinnedMemoryRoundTripsThroughTheDevice) {
  const std::size_t n = 3 * 1024 + 5;
  device::PinnedHostMemory pinned(device_->context(), device_->make_queue(), n * sizeof(float), "test");
  const std::span<float> host = pinned.floats(0, n);
  std::iota(host.begin(), host.end(), -7.0f);
  device::Buffer<float> b(device_->context(), n, "test.roundtrip");
  device_->queue().write(b, std::span<const float>(host));
  std::fill(host.begin(), host.end(), 0.0f);
  device_->queue().read(b, host);
  for (std::size_t i = 0; i < n; i += 97) ASSERT_EQ(host[i], -7.0f + static_cast<float>(i)) << i;
  EXPECT_EQ(pinned.floats(5, 10).data(), host.data() + 5);
}

TEST_F(SnapshotStagingTest, CopiesLandWhereTheSlicesViewThem) {
  scheduler::SnapshotStaging staging;
  const std::size_t n = 1000;
  // As a step program does: the first n floats of each buffer (here one longer), copied in.
  const auto region = staging.copy(0, *device_, n, iota_buffer(n + 1, 1.0f), iota_buffer(n + 1, 1.0f + 1e6f),
                                   iota_buffer(n + 1, 1.0f + 2e6f));
  ASSERT_EQ(region->params.size(), n);
  const checkpoint::StateSlice s = scheduler::SnapshotStaging::slice(region, 100, 50, 4096);
  EXPECT_EQ(s.offset, 4096u);
  ASSERT_EQ(s.params.size(), 50u);
  ASSERT_EQ(s.m.size(), 50u);
  ASSERT_EQ(s.v.size(), 50u);
  for (std::size_t i = 0; i < 50; ++i) {
    EXPECT_EQ(s.params[i], 101.0f + static_cast<float>(i));
    EXPECT_EQ(s.m[i], 1e6f + 101.0f + static_cast<float>(i));
    EXPECT_EQ(s.v[i], 2e6f + 101.0f + static_cast<float>(i));
  }
}

TEST_F(SnapshotStagingTest, ARegionIsReusedOnceNoSliceViewsIt) {
  scheduler::SnapshotStaging staging;
  const std::size_t n = 4096;
  const float* first = nullptr;
  {
    const auto region = staging.acquire(0, *device_, n);
    first = region->params.data();
    const checkpoint::StateSlice written = scheduler::SnapshotStaging::slice(region, 0, n, 0);
  }  // the save's write is done: its slices are gone
  EXPECT_EQ(staging.acquire(0, *device_, n)->params.data(), first) << "the next save copies into the same memory";
  EXPECT_NE(staging.acquire(1, *device_, n)->params.data(), first) << "each device slot has its own region";
  EXPECT_EQ(staging.acquire(0, *device_, n + 1)->params.size(), n + 1) << "a new size gets a new region";
}

TEST_F(SnapshotStagingTest, ARegionAWriteStillViewsIsNeverOverwritten) {
  scheduler::SnapshotStaging staging;
  const std::size_t n = 2048;
  const auto held = staging.acquire(0, *device_, n);
  stage(*held, n, 10.0f);
  const checkpoint::StateSlice in_flight = scheduler::SnapshotStaging::slice(held, 0, n, 0);
  const auto next = staging.acquire(0, *device_, n);
  EXPECT_NE(next->params.data(), held->params.data());
  stage(*next, n, 5000.0f);
  for (std::size_t i = 0; i < n; i += 17) {
    ASSERT_EQ(in_flight.params[i], 10.0f + static_cast<float>(i)) << i;
    ASSERT_EQ(in_flight.v[i], 2e6f + 10.0f + static_cast<float>(i)) << i;
  }
}

}  // namespace
}  // namespace paxocl::testing
