// IciRing: the ring algorithm for collectives among OpenCL devices that share one context (their
// buffers visible to each other: device::open_devices with shared contexts). Data moves device to
// device with clEnqueueCopyBuffer and sums are added on the receiving device by a small kernel;
// the host only enqueues. With P members and a buffer split into P chunks (shard_range):
//   reduce_scatter_in_place: P-1 steps; at step s member m sends chunk (m-s-1) mod P to m+1, which
//     adds it to its own. Afterwards member m's chunk m holds the sum over all members, always
//     added in the same order ((x[m+1] + x[m+2]) + ...) + x[m]: reproducible.
//   all_gather_in_place: P-1 steps; member m sends chunk (m-s) mod P to m+1. Afterwards every
//     member holds every member's chunk m.
// Each step's copies wait only for the events that produced their input, so the P transfers of a
// step run concurrently. Used by IciCommunicator on its worker thread; calls return once done.
#pragma once

#include <vector>

#include "device/device.h"
#include "device/program_cache.h"

namespace paxocl::collectives {

class IciRing {
 public:
  using Buffers = std::vector<device::Buffer<float>>;
  // `queues`: the members' communication queues, in member order. Throws ConfigError unless the
  // members share one context.
  IciRing(const std::vector<device::Device*>& members, std::vector<device::Queue*> queues);

  static bool possible(const std::vector<device::Device*>& members);  // one shared context

  void reduce_scatter_in_place(const Buffers& full, std::size_t n);
  void all_gather_in_place(const Buffers& full, std::size_t n);
  // Member `root`'s first n elements to every member, passed along the ring.
  void broadcast(const Buffers& buffers, std::size_t n, int root);
  // Scratch full-size buffers in the shared context (e.g. to reduce-scatter without clobbering inputs).
  Buffers scratch(std::size_t n) const;
  void copy(int member, const device::Buffer<float>& src, std::size_t src_offset, const device::Buffer<float>& dst,
            std::size_t dst_offset, std::size_t count);  // on member's queue, blocking

 private:
  int size() const { return static_cast<int>(queues_.size()); }
  void finish();

  const device::Context* context_;
  std::vector<device::Queue*> queues_;
  std::vector<device::Kernel> accumulate_;  // per member: dst[offset + i] += src[i]
};

}  // namespace paxocl::collectives
