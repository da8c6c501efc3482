// The tensor group's collectives (collectives/tensor_communicator.h) against CPU references: for
// 1 to 4 local members (host-staged and ring), alone and under mpirun (the group then spans the
// processes, tensor rank = process * local members + member), the sum, and sequence parallelism's
// reduce-scatter and all-gather, whose shards must come in tensor-rank order: shard sizes that
// are not multiples of anything (1, 7, 301) and values that tell every element apart.
// ctest runs it alone with 4 PoCL devices, and under mpirun -np 2 with 2 devices each.
#include <gtest/gtest.h>

#include <numeric>

#include "collectives/tensor_communicator.h"
#include "device/device_selection.h"
#include "tests/mpi_test_main.h"

namespace paxocl::collectives {
namespace {

class TensorCommunicatorTest : public ::testing::TestWithParam<bool> {  // shared context: ring
 protected:
  void SetUp() override {
    devices_ = device::open_devices(device::enumerate_devices(), GetParam());
    devices_.resize(std::min<std::size_t>(devices_.size(), 4));
  }
  device::Device& dev(int m) { return *devices_[static_cast<std::size_t>(m)]; }
  device::Buffer<float> upload(int m, const std::vector<float>& host) {
    device::Buffer<float> b(dev(m).context(), host.size(), "member");
    dev(m).queue().write(b, std::span<const float>(host));
    return b;
  }
  std::vector<float> download(int m, const device::Buffer<float>& b) {
    std::vector<float> out(b.count());
    dev(m).queue().read(b, std::span<float>(out));
    return out;
  }
  device::Event ready(int m) {
    device::Event e = dev(m).queue().marker();
    dev(m).queue().flush();
    return e;
  }
  // Every group this process can form: its first L devices, with every process of the job.
  template <typename Check>
  void for_each_group(Check check) {
    const ProcessWorld& world = paxocl::testing::test_world();
    std::vector<int> processes(static_cast<std::size_t>(world.size()));
    std::iota(processes.begin(), processes.end(), 0);
    for (int L = 1; L <= static_cast<int>(devices_.size()); ++L) {
      std::vector<device::Device*> local;
      for (int m = 0; m < L; ++m) local.push_back(&dev(m));
      TensorCommunicator comm(local, world, processes);
      ASSERT_EQ(comm.size(), L * world.size());
      SCOPED_TRACE(::testing::Message() << L << " local member(s) x " << world.size() << " process(es)");
      check(comm, L, world.rank() * L);  // the first local member's tensor rank
    }
  }
  std::vector<std::unique_ptr<device::Device>> devices_;
};

TEST_P(TensorCommunicatorTest, SumAddsEveryMembersBuffer) {
  for_each_group([&](TensorCommunicator& comm, int L, int first_rank) {
    const int t = comm.size();
    for (std::size_t n : {1u, 7u, 301u}) {
      IciCommunicator::Buffers buffers;
      Pending pending;
      for (int m = 0; m < L; ++m) {
        std::vector<float> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((first_rank + m) * 1000 + static_cast<int>(i));
        buffers.push_back(upload(m, v));
        pending = comm.sum(m, buffers.back(), n, ready(m));
      }
      pending.wait();
      for (int m = 0; m < L; ++m) {
        const std::vector<float> got = download(m, buffers[static_cast<std::size_t>(m)]);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], static_cast<float>(1000.0 * t * (t - 1) / 2 + t * static_cast<double>(i))) << m << " " << i;
        }
      }
    }
  });
}

TEST_P(TensorCommunicatorTest, ReduceScatterGivesRankRItsRowsOfTheSum) {
  for_each_group([&](TensorCommunicator& comm, int L, int first_rank) {
    const int t = comm.size();
    for (std::size_t n : {1u, 7u, 301u}) {
      const std::size_t full = static_cast<std::size_t>(t) * n;
      IciCommunicator::Buffers shards;
      Pending pending;
      for (int m = 0; m < L; ++m) {
        std::vector<float> v(full);  // member of rank q: q * 10000 + i
        for (std::size_t i = 0; i < full; ++i) v[i] = static_cast<float>((first_rank + m) * 10000 + static_cast<int>(i));
        shards.push_back(upload(m, std::vector<float>(n, -1.0f)));
        pending = comm.reduce_scatter(m, upload(m, v), shards.back(), n, ready(m));
      }
      pending.wait();
      for (int m = 0; m < L; ++m) {
        const std::vector<float> got = download(m, shards[static_cast<std::size_t>(m)]);
        const auto rank = static_cast<std::size_t>(first_rank + m);
        for (std::size_t j = 0; j < n; ++j) {
          const double i = static_cast<double>(rank * n + j);  // rank r holds elements [r n, (r + 1) n)
          ASSERT_EQ(got[j], static_cast<float>(10000.0 * t * (t - 1) / 2 + t * i)) << "rank " << rank << " element " << j;
        }
      }
    }
  });
}

TEST_P(TensorCommunicatorTest, AllGatherConcatenatesTheShardsInRankOrder) {
  for_each_group([&](TensorCommunicator& comm, int L, int first_rank) {
    const int t = comm.size();
    for (std::size_t n : {1u, 7u, 301u}) {
      const std::size_t full = static_cast<std::size_t>(t) * n;
      IciCommunicator::Buffers outputs;
      Pending pending;
      for (int m = 0; m < L; ++m) {
        std::vector<float> shard(n);  // rank r's shard: the elements r n + j
        for (std::size_t j = 0; j < n; ++j) {
          shard[j] = static_cast<float>(static_cast<std::size_t>(first_rank + m) * n + j) + 0.5f;
        }
        outputs.push_back(upload(m, std::vector<float>(full, -1.0f)));
        pending = comm.all_gather(m, upload(m, shard), outputs.back(), n, ready(m));
      }
      pending.wait();
      for (int m = 0; m < L; ++m) {
        const std::vector<float> got = download(m, outputs[static_cast<std::size_t>(m)]);
        for (std::size_t i = 0; i < full; ++i) {
          ASSERT_EQ(got[i], static_cast<float>(i) + 0.5f) << "member " << m << " element " << i;
        }
      }
    }
  });
}

TEST_P(TensorCommunicatorTest, MembersMakingDifferentCallsIsALogicError) {
  if (devices_.size() < 2) GTEST_SKIP() << "needs 2 devices";
  const ProcessWorld& world = paxocl::testing::test_world();
  if (world.size() > 1) GTEST_SKIP() << "one process: the other processes would wait for the collective";
  TensorCommunicator comm({&dev(0), &dev(1)}, world, {0});
  device::Buffer<float> a = upload(0, std::vector<float>(4, 1.0f)), b = upload(1, std::vector<float>(8, 1.0f));
  (void)comm.sum(0, a, 4, ready(0));
  EXPECT_THROW((void)comm.all_gather(1, b, b, 4, ready(1)), std::logic_error);
  comm.abort(std::make_exception_ptr(DeviceError("test over")));
}

INSTANTIATE_TEST_SUITE_P(HostAndRing, TensorCommunicatorTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Ring" : "HostStaged"; });

}  // namespace
}  // namespace paxocl::collectives
