// IciCommunicator: asynchronous collectives among OpenCL devices of this process (the ICI part
// of a mesh axis group), run by a worker thread on per-device communication queues, each once
// its wait events have completed. The caller's host thread never blocks; compute queues can wait
// on Pending::device_event(member's context). Two algorithms, by how the devices were opened:
//   ring (members share one context, device::open_devices): device-to-device copies and
//     device-side sums around the ring (collectives/ici_ring.h); a hierarchical all-reduce
//     reduce-scatters in the ring, runs its HostStage on the chunks, and all-gathers in the ring;
//   host-staged (separate contexts: devices cannot address each other's memory): each member's
//     buffer is read to the host, combined there (sums in member order), and written back.
// Both are reproducible run to run; they add in different orders, so they differ in fp32 rounding.
//
// Element ranges are split by MpiCommunicator::shard_range, so sizes need not divide by the group.
#pragma once

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "collectives/ici_ring.h"
#include "collectives/pending.h"
#include "device/device.h"

namespace paxocl::collectives {

class IciCommunicator {
 public:
  using Buffers = std::vector<device::Buffer<float>>;  // one per member, in member order
  using Events = std::vector<device::Event>;           // dependencies of an operation (any members' contexts)

  explicit IciCommunicator(std::vector<device::Device*> members);
  // Waits for the operation running on the worker, if any, and fails the queued ones (their
  // Pendings throw DeviceError) rather than running them. An owner whose operations block on
  // other communicators (MPI groups) shuts those down first, so the running one ends.
  ~IciCommunicator();
  IciCommunicator(const IciCommunicator&) = delete;
  IciCommunicator& operator=(const IciCommunicator&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  bool ring() const { return ring_ != nullptr; }

  // Tracing: while on, each operation's host-clock interval (steady_clock ns) is recorded, from
  // when its wait_for events have completed to when its result is written.
  struct TraceEntry {
    std::string name;
    std::int64_t start_ns = 0, end_ns = 0;
  };
  void set_tracing(bool on);
  std::vector<TraceEntry> take_trace();

  // Runs on the host sum before it is written back: how hierarchical collectives continue across
  // processes (e.g. an MPI all-reduce, then a scale for a mean).
  using HostStage = std::function<void(std::span<float>)>;

  // `pending`: a Pending the caller already handed out (collectives/tensor_communicator.h); else a new one.
  Pending all_reduce(Buffers buffers, std::size_t n, Events wait_for = {}, HostStage across = {},
                     Pending pending = Pending());  // sum, in place
  Pending all_gather(Buffers shards, Buffers outputs, std::size_t n, Events wait_for = {},
                     Pending pending = Pending());  // outputs: n each
  // Whether a reduce-scatter may use its inputs as the ring's workspace (their contents are then lost).
  enum class Inputs { kKept, kConsumed };
  Pending reduce_scatter(Buffers inputs, Buffers shards, std::size_t n, Events wait_for = {},
                         Pending pending = Pending(), Inputs use = Inputs::kKept);  // sum
  Pending broadcast(Buffers buffers, std::size_t n, int root, Events wait_for = {});

  // Any operation (the collectives above, or composites such as collectives/fsdp_communicator.h):
  // `work` runs on the worker, in order with the others, once `wait_for` have completed, and moves data with read()/write(),
  // which are blocking transfers on the members' communication queues, for the worker only.
  Pending stage(std::function<void()> work, Events wait_for, std::string name, Pending pending = Pending());
  void read(int member, const device::Buffer<float>& b, std::size_t offset, std::span<float> out);
  void write(int member, const device::Buffer<float>& b, std::size_t offset, std::span<const float> in);
  // The members' first n floats summed on the host in member order (the same sum on every run).
  std::vector<float> sum_members(const Buffers& buffers, std::size_t n);

 private:
  void run();

  std::vector<device::Device*> members_;
  std::vector<device::Queue> queues_;  // communication queues, one per member
  std::unique_ptr<IciRing> ring_;      // when the members share a context
  std::mutex mutex_;
  std::condition_variable wake_;
  struct Job {
    std::function<void()> work;
    Events wait_for;  // waited on by the worker before `work`
    Pending pending;
    std::string name;
  };
  std::deque<Job> jobs_;
  bool stopping_ = false, tracing_ = false;
  std::vector<TraceEntry> trace_;
  std::thread worker_;
};

}  // namespace paxocl::collectives
