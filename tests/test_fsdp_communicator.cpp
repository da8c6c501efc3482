// FSDP's hierarchical collectives (collectives/fsdp_communicator.h) against CPU references, for
// every split of this process's devices into ICI [data, fsdp] and of the processes into DCN
// [data, fsdp], on units of odd sizes (some smaller than the number of pieces: empty shards).
// ctest runs it alone with 4 PoCL devices, and under mpirun -np 2 and -np 4 with 2 devices each.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/mpi_test_main.h"
#include "collectives/fsdp_communicator.h"
#include "device/device_selection.h"

namespace paxocl::collectives {
namespace {

std::vector<std::pair<int, int>> factor_pairs(int n) {  // (data, fsdp) with data * fsdp = n
  std::vector<std::pair<int, int>> pairs;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) pairs.emplace_back(d, n / d);
  }
  return pairs;
}

// The split of a unit of n floats: chunks by shard_range over the DCN fsdp processes, each
// chunk's shards over the ICI fsdp devices; shards sit at offset 3 of their buffers.
// The mesh's sizes; the tests compute coordinates from them on their own (row-major: local device
// k has ICI fsdp index k % ici_fsdp, process p DCN fsdp index p % dcn_fsdp).
struct MeshSizes {
  int ici_data, ici_fsdp, dcn_data, dcn_fsdp;
  device::Mesh mesh(int local_devices) const {
    return device::Mesh({ici_data, ici_fsdp, 1}, {dcn_data, dcn_fsdp, 1}, dcn_data * dcn_fsdp, local_devices);
  }
};

UnitSplit split_of(std::size_t n, const MeshSizes& mesh, int process_fsdp) {
  UnitSplit s;
  s.size = n;
  for (int p = 0; p < mesh.dcn_fsdp; ++p) {
    const auto [b, e] = MpiCommunicator::shard_range(n, mesh.dcn_fsdp, p);
    s.chunks.push_back({b, e});
  }
  const auto chunk = s.chunks[static_cast<std::size_t>(process_fsdp)];
  for (int f = 0; f < mesh.ici_fsdp; ++f) {
    const auto [b, e] = MpiCommunicator::shard_range(chunk.end - chunk.begin, mesh.ici_fsdp, f);
    s.shards.push_back({chunk.begin + b, chunk.begin + e});
    s.shard_offsets.push_back(3);
  }
  return s;
}

class FsdpCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& info : device::enumerate_devices()) devices_.push_back(std::make_unique<device::Device>(info));
    devices_.resize(std::min<std::size_t>(devices_.size(), 4));
  }
  std::vector<device::Device*> local(int n) {
    std::vector<device::Device*> g;
    for (int i = 0; i < n; ++i) g.push_back(devices_[static_cast<std::size_t>(i)].get());
    return g;
  }
  device::Buffer<float> upload(int device, const std::vector<float>& host) {
    device::Device& d = *devices_[static_cast<std::size_t>(device)];
    device::Buffer<float> b(d.context(), std::max<std::size_t>(1, host.size()), "test buffer");
    if (!host.empty()) d.queue().write(b, std::span<const float>(host));
    return b;
  }
  std::vector<float> download(int device, const device::Buffer<float>& b, std::size_t n) {
    std::vector<float> out(n);
    if (n > 0) devices_[static_cast<std::size_t>(device)]->queue().read(b, std::span<float>(out));
    return out;
  }
  // Every mesh this process can form, each with `check(mesh, communicator)`.
  template <typename Check>
  void for_each_mesh(Check check) {
    const int W = paxocl::testing::test_world().size();
    for (int n_local = 1; n_local <= static_cast<int>(devices_.size()); ++n_local) {
      for (auto [ici_data, ici_fsdp] : factor_pairs(n_local)) {
        for (auto [dcn_data, dcn_fsdp] : factor_pairs(W)) {
          const MeshSizes mesh{ici_data, ici_fsdp, dcn_data, dcn_fsdp};
          FsdpCommunicator comm(local(n_local), paxocl::testing::test_world(), mesh.mesh(n_local));
          SCOPED_TRACE(::testing::Message() << "ICI [" << ici_data << "," << ici_fsdp << "] x DCN [" << dcn_data << ","
                                            << dcn_fsdp << "]");
          check(mesh, comm, n_local);
        }
      }
    }
  }
  std::vector<std::unique_ptr<device::Device>> devices_;
};

TEST_F(FsdpCommunicatorTest, GatherAssemblesTheUnitOnEveryDeviceAndTheHost) {
  for_each_mesh([&](const MeshSizes& mesh, FsdpCommunicator& comm, int n_local) {
    const int pf = paxocl::testing::test_world().rank() % mesh.dcn_fsdp;
    for (std::size_t n : {3u, 1001u}) {
      const UnitSplit split = split_of(n, mesh, pf);
      auto value = [](std::size_t i) { return 0.5f * static_cast<float>(i) + 1.0f; };
      IciCommunicator::Buffers shards, slots;
      for (int k = 0; k < n_local; ++k) {
        const auto s = split.shards[static_cast<std::size_t>(k % mesh.ici_fsdp)];
        std::vector<float> buffer(3 + s.end - s.begin, -7.0f);  // before the offset: untouched
        // Replicas of ICI data index > 0 hold garbage: the gather must read index 0's shard.
        for (std::size_t i = s.begin; i < s.end; ++i) buffer[3 + i - s.begin] = k < mesh.ici_fsdp ? value(i) : -1.0f;
        shards.push_back(upload(k, buffer));
        slots.push_back(upload(k, std::vector<float>(n, 0.0f)));
      }
      std::vector<float> host(n, 0.0f);
      comm.gather(split, shards, slots, {}, "test gather", host).wait();
      for (int k = 0; k < n_local; ++k) {
        const std::vector<float> got = download(k, slots[static_cast<std::size_t>(k)], n);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], value(i)) << "device " << k << " element " << i << " of " << n;
      }
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], value(i)) << "host element " << i;
    }
  });
}

TEST_F(FsdpCommunicatorTest, ReduceScatterSumsEveryDeviceOfTheJobIntoTheShards) {
  for_each_mesh([&](const MeshSizes& mesh, FsdpCommunicator& comm, int n_local) {
    const int pf = paxocl::testing::test_world().rank() % mesh.dcn_fsdp, D = n_local * paxocl::testing::test_world().size();
    for (std::size_t n : {3u, 1001u}) {
      const UnitSplit split = split_of(n, mesh, pf);
      IciCommunicator::Buffers grads, shards;
      for (int k = 0; k < n_local; ++k) {
        const int G = paxocl::testing::test_world().rank() * n_local + k;  // the device's index in the job
        std::vector<float> g(n);
        for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<float>(G * 1000 + static_cast<int>(i % 13));
        grads.push_back(upload(k, g));
        const auto s = split.shards[static_cast<std::size_t>(k % mesh.ici_fsdp)];
        shards.push_back(upload(k, std::vector<float>(3 + s.end - s.begin, -7.0f)));
      }
      comm.reduce_scatter(split, grads, shards, 0.5f, {}, "test reduce-scatter").wait();
      for (int k = 0; k < n_local; ++k) {
        const auto s = split.shards[static_cast<std::size_t>(k % mesh.ici_fsdp)];
        const std::vector<float> got = download(k, shards[static_cast<std::size_t>(k)], 3 + s.end - s.begin);
        for (std::size_t j = 0; j < 3; ++j) ASSERT_EQ(got[j], -7.0f) << "written before the shard's offset";
        for (std::size_t i = s.begin; i < s.end; ++i) {
          const double want = 0.5 * (1000.0 * D * (D - 1) / 2 + D * static_cast<double>(i % 13));
          ASSERT_EQ(got[3 + i - s.begin], static_cast<float>(want)) << "device " << k << " element " << i;
        }
      }
    }
  });
}

TEST_F(FsdpCommunicatorTest, AMeshThatDoesNotMatchTheDevicesIsAConfigError) {
  const int W = paxocl::testing::test_world().size();
  EXPECT_THROW(FsdpCommunicator(local(1), paxocl::testing::test_world(), MeshSizes{1, 2, 1, W}.mesh(2)), ConfigError);
  EXPECT_THROW(FsdpCommunicator(local(1), paxocl::testing::test_world(), MeshSizes{1, 1, 1, W + 1}.mesh(1)), ConfigError);
}

}  // namespace
}  // namespace paxocl::collectives
