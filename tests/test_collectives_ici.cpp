// In-process collectives across OpenCL devices, against CPU references, for groups of 1 to 4
// devices and odd sizes (ctest runs it with PoCL exposing four devices), with both algorithms:
// host-staged (a context per device) and ring (one shared context).
#include <gtest/gtest.h>

#include "collectives/ici_communicator.h"
#include "collectives/mpi_communicator.h"
#include "device/device_selection.h"

namespace paxocl::collectives {
namespace {

class IciTest : public ::testing::TestWithParam<bool> {  // shared context: ring
 protected:
  void SetUp() override {
    devices_ = device::open_devices(device::enumerate_devices(), GetParam());
    if (devices_.size() < 4) GTEST_SKIP() << "needs 4 OpenCL devices (POCL_DEVICES='pthread pthread pthread pthread')";
  }
  std::vector<device::Device*> group(int n) {
    std::vector<device::Device*> g;
    for (int i = 0; i < n; ++i) g.push_back(devices_[static_cast<std::size_t>(i)].get());
    return g;
  }
  static device::Buffer<float> upload(device::Device& d, const std::vector<float>& host) {
    device::Buffer<float> b(d.context(), std::max<std::size_t>(1, host.size()), "member");
    if (!host.empty()) d.queue().write(b, std::span<const float>(host));
    return b;
  }
  static std::vector<float> download(device::Device& d, const device::Buffer<float>& b, std::size_t n) {
    std::vector<float> out(n);
    if (n > 0) d.queue().read(b, std::span<float>(out));
    return out;
  }
  std::vector<std::unique_ptr<device::Device>> devices_;
};

TEST_P(IciTest, AllReduceAllGatherReduceScatterBroadcastForGroupsOf1To4) {
  for (int P = 1; P <= 4; ++P) {
    IciCommunicator comm(group(P));
    EXPECT_EQ(comm.ring(), GetParam() && P > 1);
    for (std::size_t n : {1u, 7u, 1003u}) {
      // all-reduce: member m holds m * 100 + i % 11
      IciCommunicator::Buffers bufs;
      for (int m = 0; m < P; ++m) {
        std::vector<float> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(m * 100 + static_cast<int>(i % 11));
        bufs.push_back(upload(*devices_[static_cast<std::size_t>(m)], v));
      }
      comm.all_reduce(bufs, n).wait();
      for (int m = 0; m < P; ++m) {
        const auto got = download(*devices_[static_cast<std::size_t>(m)], bufs[static_cast<std::size_t>(m)], n);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], static_cast<float>(100 * P * (P - 1) / 2 + P * static_cast<int>(i % 11))) << P << " " << n;
        }
      }
      // all-gather of uneven shards, then reduce-scatter back
      IciCommunicator::Buffers shards, outputs, scattered;
      for (int m = 0; m < P; ++m) {
        const auto [b, e] = MpiCommunicator::shard_range(n, P, m);
        std::vector<float> mine(e - b);
        for (std::size_t j = 0; j < mine.size(); ++j) mine[j] = static_cast<float>(b + j);
        auto& d = *devices_[static_cast<std::size_t>(m)];
        shards.push_back(upload(d, mine));
        outputs.push_back(upload(d, std::vector<float>(n, -1.0f)));
        scattered.push_back(upload(d, std::vector<float>(std::max<std::size_t>(1, e - b), -1.0f)));
      }
      comm.all_gather(shards, outputs, n).wait();
      for (int m = 0; m < P; ++m) {
        const auto got = download(*devices_[static_cast<std::size_t>(m)], outputs[static_cast<std::size_t>(m)], n);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>(i));
      }
      comm.reduce_scatter(outputs, scattered, n).wait();  // every member holds 0..n-1: sums are P * i
      for (int m = 0; m < P; ++m) {
        const auto [b, e] = MpiCommunicator::shard_range(n, P, m);
        const auto got = download(*devices_[static_cast<std::size_t>(m)], scattered[static_cast<std::size_t>(m)], e - b);
        for (std::size_t j = 0; j < got.size(); ++j) ASSERT_EQ(got[j], static_cast<float>(P * static_cast<int>(b + j)));
      }
      // broadcast: the root's values replace everyone's
      bufs[static_cast<std::size_t>(P - 1)] = upload(*devices_[static_cast<std::size_t>(P - 1)], std::vector<float>(n, 7.0f));
      comm.broadcast(bufs, n, P - 1).wait();
      for (int m = 0; m < P; ++m) {
        for (float v : download(*devices_[static_cast<std::size_t>(m)], bufs[static_cast<std::size_t>(m)], n)) ASSERT_EQ(v, 7.0f);
      }
    }
  }
}

TEST_P(IciTest, HierarchicalAllReduceRunsTheHostStageOnTheWholeSum) {
  for (int P = 2; P <= 4; ++P) {
    IciCommunicator comm(group(P));
    for (std::size_t n : {3u, 1001u}) {  // 3 < 4 members: an empty chunk
      IciCommunicator::Buffers bufs;
      for (int m = 0; m < P; ++m) {
        std::vector<float> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((m + 1) * static_cast<int>(i % 5));
        bufs.push_back(upload(*devices_[static_cast<std::size_t>(m)], v));
      }
      std::size_t staged = 0;
      comm.all_reduce(bufs, n, {}, [&](std::span<float> sum) {  // as across processes: + 1, then halve
        staged = sum.size();
        for (float& v : sum) v = (v + 1.0f) * 0.5f;
      }).wait();
      EXPECT_EQ(staged, n);
      for (int m = 0; m < P; ++m) {
        const auto got = download(*devices_[static_cast<std::size_t>(m)], bufs[static_cast<std::size_t>(m)], n);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], (static_cast<float>(P * (P + 1) / 2 * static_cast<int>(i % 5)) + 1.0f) * 0.5f) << P << " " << i;
        }
      }
    }
  }
}

TEST_P(IciTest, ComputeQueueWaitsOnTheCollectiveWithoutTheHost) {
  IciCommunicator comm(group(2));
  IciCommunicator::Buffers bufs = {upload(*devices_[0], std::vector<float>(513, 1.0f)),
                                   upload(*devices_[1], std::vector<float>(513, 2.0f))};
  Pending pending = comm.all_reduce(bufs, 513);
  // A copy on device 1's compute queue ordered after the collective through its user event.
  device::Buffer<float> copy(devices_[1]->context(), 513, "copy");
  const std::array<device::Event, 1> wait_for{pending.device_event(devices_[1]->context())};
  std::vector<float> host(513);
  devices_[1]->queue().read(bufs[1], std::span<float>(host), true, wait_for);
  for (float v : host) ASSERT_EQ(v, 3.0f);
  EXPECT_THROW(comm.broadcast(bufs, 513, 5), ConfigError);
  EXPECT_THROW(comm.all_reduce({bufs[0]}, 513), ConfigError);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, IciTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Ring" : "HostStaged"; });

}  // namespace
}  // namespace paxocl::collectives
