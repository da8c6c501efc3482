// Collective bandwidth vs message size, per backend, with nccl-tests' definitions:
//   algbw = bytes / time;  busbw = algbw * 2(n-1)/n for all-reduce, algbw * (n-1)/n for
//   all-gather and reduce-scatter (bytes = the full tensor).
// Backends: "mpi" (host buffers across the processes of `mpirun -np N`), "ici" (device buffers
// across this process's OpenCL devices, staged through the host) and "hier" (hierarchical, device
// buffers over ICI x DCN: data parallelism's all-reduce, GradientAverager, and FSDP's unit
// all-gather and reduce-scatter, FsdpCommunicator, with every device on the fsdp axis).
// "ring" and "hier-ring" are "ici" and "hier" with this process's devices in one context, so the
// ICI part runs the ring algorithm (collectives/ici_ring.h).
// Usage: bench_collectives mpi|ici|ring|hier|hier-ring [max_bytes]   e.g. mpirun -np 2 bench_collectives hier
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>

#include "collectives/fsdp_communicator.h"
#include "collectives/gradient_averager.h"
#include "collectives/ici_communicator.h"
#include "collectives/mpi_communicator.h"
#include "device/device_selection.h"

using namespace paxocl;
using Clock = std::chrono::steady_clock;

namespace {

template <typename F>
double best_seconds(int reps, F&& f) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

void report(bool print, const char* backend, const char* op, std::size_t bytes, double secs, int n) {
  if (!print) return;
  const double algbw = static_cast<double>(bytes) / secs / 1e9;
  const double factor = std::string(op) == "all_reduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
  std::printf("%-9s %-14s %12zu B  %10.1f us  algbw %8.3f GB/s  busbw %8.3f GB/s\n", backend, op, bytes, secs * 1e6,
              algbw, algbw * factor);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  collectives::ProcessWorld world(&argc, &argv);
  const std::string backend = argc > 1 ? argv[1] : "mpi";
  const std::size_t max_bytes = argc > 2 ? std::stoull(argv[2]) : (256u << 20);
  std::vector<std::size_t> sizes;
  for (std::size_t b = 8; b <= max_bytes; b *= 8) sizes.push_back(b);
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);

  if (backend == "mpi") {
    std::vector<int> ranks(static_cast<std::size_t>(world.size()));
    std::iota(ranks.begin(), ranks.end(), 0);
    collectives::MpiCommunicator comm(world, ranks);
    const bool print = world.rank() == 0;
    if (print) std::printf("# MPI over %d process(es)\n", comm.size());
    for (std::size_t bytes : sizes) {
      const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
      std::vector<float> data(n, 1.0f), shard(collectives::MpiCommunicator::shard_range(n, comm.size(), comm.rank()).second -
                                              collectives::MpiCommunicator::shard_range(n, comm.size(), comm.rank()).first);
      const int reps = bytes > (16u << 20) ? 3 : 10;
      report(print, "mpi", "all_reduce", n * 4, best_seconds(reps, [&] { comm.all_reduce(data).wait(); }), comm.size());
      report(print, "mpi", "all_gather", n * 4, best_seconds(reps, [&] { comm.all_gather(shard, data).wait(); }), comm.size());
      report(print, "mpi", "reduce_scatter", n * 4, best_seconds(reps, [&] { comm.reduce_scatter(data, shard).wait(); }),
             comm.size());
    }
    return 0;
  }
  // "ring" (and "hier-ring"): this process's devices share a context, so ICI runs the ring.
  const bool ring = backend == "ring" || backend == "hier-ring";
  const auto devices = device::open_devices(
      device::select_devices(device::enumerate_devices(), device::parse_device_selection("auto")), ring);
  std::vector<device::Device*> members;
  for (auto& d : devices) members.push_back(d.get());
  if (backend == "hier" || backend == "hier-ring") {
    const int local = static_cast<int>(members.size()), total = local * world.size();
    std::vector<int> ranks(static_cast<std::size_t>(world.size()));
    std::iota(ranks.begin(), ranks.end(), 0);
    collectives::GradientAverager averager(members, world, ranks);
    collectives::FsdpCommunicator fsdp(members, world, device::Mesh({1, local, 1}, {1, world.size(), 1}, world.size(), local));
    const bool print = world.rank() == 0;
    if (print) std::printf("# hierarchical: %d device(s) per process x %d process(es)\n", local, world.size());
    for (std::size_t bytes : sizes) {
      const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
      collectives::UnitSplit split;  // the unit over fsdp: chunk per process, shard per device
      split.size = n;
      for (int p = 0; p < world.size(); ++p) {
        const auto [b, e] = collectives::MpiCommunicator::shard_range(n, world.size(), p);
        split.chunks.push_back({b, e});
      }
      const auto chunk = split.chunks[static_cast<std::size_t>(world.rank())];
      for (int d = 0; d < local; ++d) {
        const auto [b, e] = collectives::MpiCommunicator::shard_range(chunk.end - chunk.begin, local, d);
        split.shards.push_back({chunk.begin + b, chunk.begin + e});
        split.shard_offsets.push_back(0);
      }
      collectives::IciCommunicator::Buffers full, shards;
      for (auto& d : devices) {
        full.emplace_back(d->context(), n, "full");
        shards.emplace_back(d->context(), n / static_cast<std::size_t>(total) + 1, "shard");
      }
      const int reps = bytes > (16u << 20) ? 3 : 10;
      report(print, backend.c_str(), "all_reduce", n * 4, best_seconds(reps, [&] { averager.average(full, n).wait(); }), total);
      report(print, backend.c_str(), "all_gather", n * 4,
             best_seconds(reps, [&] { fsdp.gather(split, shards, full, {}, "bench").wait(); }), total);
      report(print, backend.c_str(), "reduce_scatter", n * 4,
             best_seconds(reps, [&] { fsdp.reduce_scatter(split, full, shards, 1.0f, {}, "bench").wait(); }), total);
    }
    return 0;
  }
  collectives::IciCommunicator comm(members);
  std::printf("# ICI over %d OpenCL device(s), %s\n", comm.size(), comm.ring() ? "ring (shared context)" : "host-staged");
  for (std::size_t bytes : sizes) {
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
    collectives::IciCommunicator::Buffers full, shards;
    for (auto& d : devices) {
      full.emplace_back(d->context(), n, "full");
      shards.emplace_back(d->context(), std::max<std::size_t>(1, n / members.size() + 1), "shard");
    }
    const int reps = bytes > (16u << 20) ? 3 : 10;
    report(true, backend.c_str(), "all_reduce", n * 4, best_seconds(reps, [&] { comm.all_reduce(full, n).wait(); }), comm.size());
    report(true, backend.c_str(), "all_gather", n * 4, best_seconds(reps, [&] { comm.all_gather(shards, full, n).wait(); }), comm.size());
    report(true, backend.c_str(), "reduce_scatter", n * 4, best_seconds(reps, [&] { comm.reduce_scatter(full, shards, n).wait(); }),
           comm.size());
  }
  return 0;
}
