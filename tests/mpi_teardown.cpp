// Teardown while a collective is in flight that a peer never joins (it failed, or died): the
// communicator's destructor must cancel, not wait, so the error reaches main() and ends the job.
// Run as `mpirun -np 2 mpi_teardown MODE` (tests/mpi_teardown.sh checks it ends promptly):
//   mpi       an MpiCommunicator all-reduce;
//   averager  GradientAverager::average (its ICI worker blocked in the MPI all-reduce), with a
//             second one queued behind it;
//   fsdp      FsdpCommunicator::gather (the worker blocked in the MPI all-gather), with a
//             reduce-scatter queued behind it.
// Rank 0 starts the operations, a thread waits on the first, and a step "fails" (throws), so the
// communicator is destroyed during unwinding; rank 0 reports how long that took and what the
// waiters got, then ends the job as main() does (MPI_Abort). Rank 1 builds the same communicator
// and then waits in a barrier rank 0 never enters: only the abort ends it.
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/fsdp_communicator.h"
#include "collectives/gradient_averager.h"
#include "collectives/mpi_communicator.h"
#include "device/device_selection.h"

namespace {

using namespace paxocl;
using namespace paxocl::collectives;

std::string outcome(const Pending& p) {
  try {
    p.wait();
    return "completed";
  } catch (const std::exception& e) {
    return std::string("failed: ") + e.what();
  }
}

// The communicator under test, with `start` beginning its operations (rank 0 only).
struct Subject {
  std::shared_ptr<void> communicator;
  std::function<std::vector<Pending>()> start;
};

constexpr std::size_t kN = 4096;

Subject make_subject(const std::string& mode, const ProcessWorld& world, device::Device* dev,
                     std::vector<float>& host) {
  if (mode == "mpi") {
    auto comm = std::make_shared<MpiCommunicator>(world, std::vector<int>{0, 1});
    return {comm, [comm, &host] { return std::vector<Pending>{comm->all_reduce(host)}; }};
  }
  if (mode == "averager") {
    auto avg = std::make_shared<GradientAverager>(std::vector<device::Device*>{dev}, world, std::vector<int>{0, 1});
    return {avg, [avg, dev] {
              const IciCommunicator::Buffers grads{device::Buffer<float>(dev->context(), kN, "gradient")};
              return std::vector<Pending>{avg->average(grads, kN), avg->average(grads, kN)};
            }};
  }
  if (mode == "fsdp") {
    auto fsdp = std::make_shared<FsdpCommunicator>(std::vector<device::Device*>{dev}, world, device::Mesh({1, 1, 1}, {1, 2, 1}, 2, 1));
    return {fsdp, [fsdp, dev, &world] {
              UnitSplit split;
              split.size = kN;
              split.chunks = {{0, kN / 2}, {kN / 2, kN}};
              split.shards = {split.chunks[static_cast<std::size_t>(world.rank())]};
              split.shard_offsets = {0};
              const IciCommunicator::Buffers shard{device::Buffer<float>(dev->context(), kN / 2, "shard")};
              const IciCommunicator::Buffers unit{device::Buffer<float>(dev->context(), kN, "unit")};
              return std::vector<Pending>{fsdp->gather(split, shard, unit, {}, "gather"),
                                          fsdp->reduce_scatter(split, unit, shard, 1.0f, {}, "reduce-scatter")};
            }};
  }
  throw std::invalid_argument("mode must be mpi, averager or fsdp, not '" + mode + "'");
}

}  // namespace

int main(int argc, char** argv) {
  ProcessWorld world(&argc, &argv);
  try {
    if (world.size() != 2 || argc != 2) throw std::invalid_argument("usage: mpirun -np 2 mpi_teardown mpi|averager|fsdp");
    const std::string mode = argv[1];
    std::unique_ptr<device::Device> dev;
    if (mode != "mpi") {
      dev = std::make_unique<device::Device>(
          device::select_devices(device::enumerate_devices(), device::parse_device_selection("auto")).front());
    }
    std::vector<float> host(kN, 1.0f);
    if (world.rank() == 1) {
      const Subject subject = make_subject(mode, world, dev.get(), host);
      world.barrier();  // rank 0 never comes: it aborts the job
      return 0;
    }
    std::vector<Pending> pending;
    std::string first;  // what the first operation's waiter got
    std::thread waiter;
    std::chrono::steady_clock::time_point thrown;
    try {
      const Subject subject = make_subject(mode, world, dev.get(), host);
      pending = subject.start();
      waiter = std::thread([p = pending.front(), &first] { first = outcome(p); });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the collective is in flight
      thrown = std::chrono::steady_clock::now();
      throw std::runtime_error("a step failed");  // unwinding destroys the communicator
    } catch (const std::runtime_error&) {
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - thrown).count();
    waiter.join();
    std::printf("rank 0: past the destructor in %.2f s\n", seconds);
    for (std::size_t i = 0; i < pending.size(); ++i) {
      std::printf("rank 0: operation %zu %s\n", i, i == 0 ? first.c_str() : outcome(pending[i]).c_str());
    }
    std::fflush(stdout);
    world.abort(4);  // as main() does with an error raised by one process
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_teardown: %s\n", e.what());
    world.abort(1);
  }
}
