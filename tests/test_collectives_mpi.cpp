// Asynchronous MPI collectives against CPU references, for group sizes 1 to 4 and odd sizes, and
// their split into several MPI calls (collectives/mpi_chunks.h): the plan at real sizes above
// 2^31, and the collectives with a small chunk limit against the same references.
// ctest runs this binary alone (a group of one, no MPI) and under mpirun -np 2 and -np 4.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <numeric>
#include <thread>
#include <tuple>

#include "tests/mpi_test_main.h"
#include "collectives/mpi_chunks.h"
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

constexpr std::size_t k2To31 = std::size_t{1} << 31;

TEST(MpiChunks, WindowsCoverSizesAboveIntMaxInCallsThatFitInInt) {
  for (std::size_t n : {k2To31 - 1, k2To31, k2To31 + 5, 3 * k2To31, std::size_t{1} << 40}) {
    const auto windows = mpi_chunks::windows(n, mpi_chunks::kMaxCount);
    ASSERT_EQ(windows.size(), (n + mpi_chunks::kMaxCount - 1) / mpi_chunks::kMaxCount) << n;
    std::size_t at = 0;
    for (const auto& w : windows) {
      ASSERT_EQ(w.begin, at) << n;
      ASSERT_GT(w.end, w.begin) << n;
      ASSERT_LE(w.end - w.begin, static_cast<std::size_t>(INT_MAX)) << n;
      at = w.end;
    }
    EXPECT_EQ(at, n);
  }
  EXPECT_EQ(mpi_chunks::windows(1000, mpi_chunks::kMaxCount), (std::vector<mpi_chunks::Range>{{0, 1000}}));  // one call
  EXPECT_TRUE(mpi_chunks::windows(0, 7).empty());
  EXPECT_EQ(mpi_chunks::windows(10, 4), (std::vector<mpi_chunks::Range>{{0, 4}, {4, 8}, {8, 10}}));
  EXPECT_THROW(mpi_chunks::windows(10, 0), ConfigError);
  EXPECT_THROW(mpi_chunks::windows(10, mpi_chunks::kMaxCount + 1), ConfigError);
}

// Every v-chunk's counts, displacements and total fit in int and lie in its window, the windows
// cover the buffer, and each member's parts, concatenated, are exactly its shard.
void expect_v_chunks_cover(const std::vector<std::size_t>& shards, std::size_t limit) {
  SCOPED_TRACE(::testing::Message() << "limit " << limit << ", " << shards.size() << " members");
  const auto chunks = mpi_chunks::v_chunks(shards, limit);
  std::vector<std::size_t> shard_begin(shards.size(), 0), next(shards.size(), 0);  // next: each member's next element
  for (std::size_t i = 1; i < shards.size(); ++i) shard_begin[i] = shard_begin[i - 1] + shards[i - 1];
  for (std::size_t i = 0; i < shards.size(); ++i) next[i] = shard_begin[i];
  std::size_t at = 0;
  for (const auto& c : chunks) {
    ASSERT_EQ(c.window.begin, at);
    const std::size_t length = c.window.end - c.window.begin;
    ASSERT_GT(length, 0u);
    ASSERT_LE(length, limit);
    ASSERT_EQ(c.counts.size(), shards.size());
    ASSERT_EQ(c.displacements.size(), shards.size());
    std::size_t total = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
      ASSERT_GE(c.counts[i], 0);
      ASSERT_GE(c.displacements[i], 0);
      if (c.counts[i] == 0) continue;
      ASSERT_EQ(static_cast<std::size_t>(c.displacements[i]), total) << "member " << i << ": parts in member order";
      ASSERT_EQ(c.window.begin + static_cast<std::size_t>(c.displacements[i]), next[i]) << "member " << i;
      next[i] += static_cast<std::size_t>(c.counts[i]);
      total += static_cast<std::size_t>(c.counts[i]);
    }
    ASSERT_EQ(total, length);  // the window is filled, with no gap or overlap
    at = c.window.end;
  }
  for (std::size_t i = 0; i < shards.size(); ++i) EXPECT_EQ(next[i], shard_begin[i] + shards[i]) << "member " << i;
  EXPECT_EQ(at, std::accumulate(shards.begin(), shards.end(), std::size_t{0}));
}

TEST(MpiChunks, VChunksSplitMemberShardsAboveIntMax) {
  expect_v_chunks_cover({k2To31 + 5, 0, 3 * k2To31, 7}, mpi_chunks::kMaxCount);
  expect_v_chunks_cover({static_cast<std::size_t>(INT_MAX), static_cast<std::size_t>(INT_MAX)}, mpi_chunks::kMaxCount);
  expect_v_chunks_cover({1, 2, std::size_t{1} << 33}, mpi_chunks::kMaxCount);
  expect_v_chunks_cover({k2To31 + 5, k2To31 + 5, k2To31 + 5, k2To31 + 5}, mpi_chunks::kMaxCount);
  expect_v_chunks_cover({0, 0, 0}, mpi_chunks::kMaxCount);
  expect_v_chunks_cover({5, 0, 3, 9, 1}, 4);
  expect_v_chunks_cover({5, 0, 3, 9, 1}, 1);
  // A split that fits is one call with the shards' own counts and displacements.
  const auto one = mpi_chunks::v_chunks({3, 0, 4}, mpi_chunks::kMaxCount);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].window, (mpi_chunks::Range{0, 7}));
  EXPECT_EQ(one[0].counts, (std::vector<int>{3, 0, 4}));
  EXPECT_EQ(one[0].displacements, (std::vector<int>{0, 3, 3}));
}

TEST(MpiCommunicator, ChunkLimitOutsideOneToIntMaxIsAConfigError) {
  EXPECT_THROW(MpiCommunicator(paxocl::testing::test_world(), {paxocl::testing::test_world().rank()}, 0), ConfigError);
  EXPECT_THROW(MpiCommunicator(paxocl::testing::test_world(), {paxocl::testing::test_world().rank()},
                               mpi_chunks::kMaxCount + 1),
               ConfigError);
}

// With a chunk limit of a few elements every collective spans several MPI calls, with windows
// that cut members' shards unevenly and shards that are empty; results must equal the CPU
// references exactly (all values are small integers, so every summation order agrees).
TEST(MpiCommunicator, CollectivesSplitIntoSeveralCallsMatchTheReference) {
  const int P = paxocl::testing::test_world().size(), me = paxocl::testing::test_world().rank();
  for (std::size_t limit : {1u, 3u, 7u, 64u}) {
    MpiCommunicator comm(paxocl::testing::test_world(), all_ranks(), limit);
    for (std::size_t n : {0u, 1u, 2u, 5u, 10u, 37u, 1001u}) {
      SCOPED_TRACE(::testing::Message() << "limit " << limit << ", n " << n);
      std::vector<float> data(n);
      for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(me * 1000 + static_cast<int>(i % 97));
      comm.all_reduce(data).wait();
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(data[i], static_cast<float>(1000 * P * (P - 1) / 2 + P * static_cast<int>(i % 97))) << "all_reduce " << i;
      }

      std::vector<float> bcast(n, me == P - 1 ? 2.5f : -1.0f);
      for (std::size_t i = 0; i < n; ++i) bcast[i] += me == P - 1 ? static_cast<float>(i) : 0.0f;
      comm.broadcast(bcast, P - 1).wait();
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bcast[i], 2.5f + static_cast<float>(i)) << "broadcast " << i;

      // Splits: shard_range's (empty shards when n < P), and an uneven one with empty members:
      // member 0 and every third hold nothing, the last holds the remainder.
      MpiCommunicator::Split uneven(static_cast<std::size_t>(P), 0);
      std::size_t given = 0;
      for (int i = 0; i < P - 1; ++i) {
        if (i % 3 != 0) uneven[static_cast<std::size_t>(i)] = std::min(n - given, static_cast<std::size_t>(i) * n / 5 + 1);
        given += uneven[static_cast<std::size_t>(i)];
      }
      uneven.back() = n - given;
      for (const MpiCommunicator::Split& split : {MpiCommunicator::Split{}, uneven}) {
        std::size_t b = 0, e = 0;
        if (split.empty()) {
          std::tie(b, e) = MpiCommunicator::shard_range(n, P, me);
        } else {
          for (int i = 0; i < me; ++i) b += split[static_cast<std::size_t>(i)];
          e = b + split[static_cast<std::size_t>(me)];
        }
        std::vector<float> mine(e - b), all(n, -1.0f);
        for (std::size_t j = 0; j < mine.size(); ++j) mine[j] = static_cast<float>(b + j) * 2.0f;
        comm.all_gather(mine, all, split).wait();
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(all[i], static_cast<float>(i) * 2.0f) << "all_gather " << i;

        std::vector<float> full(n), shard(e - b, -1.0f);
        for (std::size_t i = 0; i < n; ++i) full[i] = static_cast<float>(me + 1) * static_cast<float>(i % 13);
        comm.reduce_scatter(full, shard, split).wait();
        for (std::size_t j = 0; j < shard.size(); ++j) {
          ASSERT_EQ(shard[j], static_cast<float>(P * (P + 1) / 2) * static_cast<float>((b + j) % 13)) << "reduce_scatter " << j;
        }
      }
    }
  }
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

// shutdown() cancels rather than drains: a collective the peer has not joined fails at once (its
// waiter is released with a DeviceError) and later calls throw. The peer joins afterwards, so the
// abandoned request still completes inside MPI and the job ends cleanly.
TEST(MpiCommunicator, ShutdownReleasesWaitersOfACollectiveThePeerHasNotJoined) {
  const auto& world = paxocl::testing::test_world();
  if (world.size() < 2) {
    MpiCommunicator alone(world, {0});
    alone.shutdown();
    std::vector<float> data(3);
    EXPECT_THROW(alone.all_reduce(data), DeviceError);
    return;
  }
  static std::vector<float> data(1000, 1.0f);  // MPI may write to it after the test: it must outlive it
  if (world.rank() <= 1) {
    MpiCommunicator pair(world, {0, 1});
    if (world.rank() == 0) {
      Pending pending = pair.all_reduce(data);
      std::exception_ptr got;
      std::thread waiter([&] {
        try {
          pending.wait();
        } catch (...) {
          got = std::current_exception();
        }
      });
      const auto start = std::chrono::steady_clock::now();
      pair.shutdown();
      waiter.join();
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
      EXPECT_TRUE(pending.done());
      EXPECT_THROW(std::rethrow_exception(got), DeviceError);
      EXPECT_THROW(pair.all_reduce(data), DeviceError);
    }
    world.barrier();  // rank 1 joins the collective only after rank 0 gave up on it
    if (world.rank() == 1) pair.all_reduce(data).wait();
  } else {
    world.barrier();
  }
  world.barrier();  // rank 0 progresses MPI here, so the abandoned collective completes
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
