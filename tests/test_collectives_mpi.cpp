// Asynchronous MPI collectives against CPU references, for group sizes 1 to 4 and odd sizes.
// ctest runs this binary alone (a group of one, no MPI) and under mpirun -np 2 and -np 4.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/mpi_test_main.h"
#include "collectives/mpi_communicator.h"
#include "device/device_selection.h"
#include "device/device.h"

namespace paxocl::collectives {
namespace {

std::vector<int> all_ranks() {
  std::vector<int> r(static_cast<std::size_t>(paxocl::testing::test_world().size()));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

TEST(MpiCommunicator, ShardRangesCoverUnevenSizes) {
  EXPECT_EQ(MpiCommunicator::shard_range(10, 4, 0), (std::pair<std::size_t, std::size_t>{0, 3}));
  EXPECT_EQ(MpiCommunicator::shard_range(10, 4, 1), (std::pair<std::size_t, std::size_t>{3, 6}));
  EXPECT_EQ(MpiCommunicator::shard_range(10, 4, 3), (std::pair<std::size_t, std::size_t>{8, 10}));
  EXPECT_EQ(MpiCommunicator::shard_range(1, 4, 2), (std::pair<std::size_t, std::size_t>{1, 1}));  // empty shard
}

TEST(MpiCommunicator, AllReduceSumsOverTheGroup) {
  MpiCommunicator comm(paxocl::testing::test_world(), all_ranks());
  const int P = comm.size(), me = comm.rank();
  for (std::size_t n : {1u, 7u, 1001u, 65537u}) {
    std::vector<float> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(me * 1000 + static_cast<int>(i % 97));
    comm.all_reduce(data).wait();
    for (std::size_t i = 0; i < n; ++i) {
      const float want = static_cast<float>(1000 * P * (P - 1) / 2 + P * static_cast<int>(i % 97));
      ASSERT_EQ(data[i], want) << "n=" << n << " i=" << i;
    }
  }
}

TEST(MpiCommunicator, AllGatherAndReduceScatterWithUnevenShards) {
  MpiCommunicator comm(paxocl::testing::test_world(), all_ranks());
  const int P = comm.size(), me = comm.rank();
  for (std::size_t n : {1u, 10u, 1003u}) {
    const auto [b, e] = MpiCommunicator::shard_range(n, P, me);
    std::vector<float> mine(e - b), all(n, -1.0f);
    for (std::size_t j = 0; j < mine.size(); ++j) mine[j] = static_cast<float>(b + j) * 2.0f;
    comm.all_gather(mine, all).wait();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(all[i], static_cast<float>(i) * 2.0f) << "all_gather n=" << n;

    std::vector<float> full(n), shard(e - b, -1.0f);
    for (std::size_t i = 0; i < n; ++i) full[i] = static_cast<float>(me + 1) * static_cast<float>(i % 13);
    comm.reduce_scatter(full, shard).wait();
    for (std::size_t j = 0; j < shard.size(); ++j) {
      ASSERT_EQ(shard[j], static_cast<float>(P * (P + 1) / 2) * static_cast<float>((b + j) % 13)) << "reduce_scatter n=" << n;
    }
  }
}

TEST(MpiCommunicator, BroadcastFromTheLastMember) {
  MpiCommunicator comm(paxocl::testing::test_world(), all_ranks());
  std::vector<float> data(33, comm.rank() == comm.size() - 1 ? 4.5f : 0.0f);
  comm.broadcast(data, comm.size() - 1).wait();
  for (float v : data) ASSERT_EQ(v, 4.5f);
  EXPECT_THROW(comm.broadcast(data, comm.size()), ConfigError);
}

TEST(MpiCommunicator, SubGroupOnlyInvolvesItsMembers) {
  if (paxocl::testing::test_world().size() < 3) GTEST_SKIP() << "needs 3 or more processes";
  const int last = paxocl::testing::test_world().size() - 1;
  if (paxocl::testing::test_world().rank() != 0 && paxocl::testing::test_world().rank() != last) return;  // not a member: takes no part
  MpiCommunicator pair(paxocl::testing::test_world(), {0, last});
  std::vector<float> data(5, static_cast<float>(paxocl::testing::test_world().rank()));
  pair.all_reduce(data).wait();
  for (float v : data) ASSERT_EQ(v, static_cast<float>(last));
}

TEST(MpiCommunicator, DeviceQueueWaitsOnTheCollectiveThroughAnOpenClEvent) {
  const auto selected = device::select_devices(device::enumerate_devices(), device::parse_device_selection("auto"));
  ASSERT_FALSE(selected.empty());
  device::Device dev(selected.front());
  MpiCommunicator comm(paxocl::testing::test_world(), all_ranks());
  std::vector<float> data(4099, 1.0f);
  device::Buffer<float> on_device(dev.context(), data.size(), "reduced");
  Pending pending = comm.all_reduce(data);
  const device::Event ready = pending.device_event(dev.context());
  // The copy to the device is enqueued now but runs only once the all-reduce has finished.
  const std::array<device::Event, 1> wait_for{ready};
  dev.queue().write(on_device, std::span<const float>(data), false, wait_for);
  std::vector<float> back(data.size());
  dev.queue().read(on_device, std::span<float>(back));
  for (float v : back) ASSERT_EQ(v, static_cast<float>(comm.size()));
  EXPECT_TRUE(pending.done());
}

}  // namespace
}  // namespace paxocl::collectives
