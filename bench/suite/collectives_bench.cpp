#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "collectives/ici_communicator.h"

namespace paxocl::bench {

Table bench_collectives(const std::vector<device::DeviceInfo>& infos, bool quick) {
  Table t{"collectives", fmt::format("All-reduce over {} device(s) of this process", infos.size()),
          {"algorithm", "bytes", "algbw_gb_per_s", "busbw_gb_per_s", "us"}, {}, plot_of("bytes", "busbw_gb_per_s", "algorithm"),
          {"algorithm", "bytes"}};
  t.plot->y_label = "bus bandwidth GB/s (nccl-tests)";
  if (infos.size() < 2) return t;  // nothing to reduce over
  for (const bool ring : {true, false}) {
    const auto devices = device::open_devices(infos, ring);
    std::vector<device::Device*> members;
    for (const auto& d : devices) members.push_back(d.get());
    collectives::IciCommunicator comm(members);
    const double P = static_cast<double>(members.size());
    for (std::size_t bytes = 8; bytes <= (quick ? (1u << 20) : (64u << 20)); bytes *= 8) {
      const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(float));
      collectives::IciCommunicator::Buffers buffers;
      for (device::Device* d : members) buffers.emplace_back(d->context(), n, "bench.allreduce");
      comm.all_reduce(buffers, n).wait();  // warm-up
      double best = 1e30;
      for (int i = 0; i < (bytes > (8u << 20) ? 3 : 10); ++i) {
        const auto start = std::chrono::steady_clock::now();
        comm.all_reduce(buffers, n).wait();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      const double algbw = static_cast<double>(n * sizeof(float)) / best / 1e9;
      t.add({comm.ring() ? "ring" : "host_staged", n * sizeof(float), algbw, algbw * 2 * (P - 1) / P, best * 1e6});
    }
  }
  return t;
}

}  // namespace paxocl::bench
