// PinnedHostMemory: page-locked host memory that device copies reach at DMA speed, for staging
// that is reused (checkpoint snapshots).
//
// OpenCL has no "pinned" flag. The portable idiom (NVIDIA's and AMD's OpenCL programming guides) is
// a buffer created with CL_MEM_ALLOC_HOST_PTR and mapped: the driver allocates it page-locked, and a
// clEnqueueReadBuffer/WriteBuffer whose host pointer lies in the mapping runs as one DMA instead of
// going through the driver's pageable bounce buffer. On a CPU device (PoCL) it is plain host memory.
// The mapping lives as long as the object; it is independent of the Device that made it (it holds
// its own references to the queue and the buffer), so a writer thread may drop it last.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "device/cl_handle.h"
#include "device/context.h"
#include "device/queue.h"

namespace paxocl::device {

class PinnedHostMemory {
 public:
  // `bytes` of host memory, mapped for reading and writing through `queue`. Throws ClError (naming
  // `name` and the size) when the driver cannot page-lock that much.
  PinnedHostMemory(const Context& context, const Queue& queue, std::size_t bytes, const std::string& name);
  ~PinnedHostMemory();
  PinnedHostMemory(const PinnedHostMemory&) = delete;
  PinnedHostMemory& operator=(const PinnedHostMemory&) = delete;

  std::size_t bytes() const { return bytes_; }
  // `count` floats from float `offset` (offset + count <= bytes() / 4).
  std::span<float> floats(std::size_t offset, std::size_t count) const;

 private:
  ClHandle<cl_command_queue> queue_;
  ClHandle<cl_mem> mem_;
  void* host_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace paxocl::device
