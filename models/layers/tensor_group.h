// TensorGroup: the devices that together hold one model replica under tensor parallelism
// (models/tensor_split.h), as one member sees them. The layers call it where a partial result
// becomes whole: after the row-parallel projections (forward), after the column-parallel ones'
// input gradient (backward), around the vocabulary-parallel embedding, LM head and cross-entropy.
// Under sequence parallelism (models/layers/sequence_parallel.h) the sums after the row-parallel
// projections become reduce-scatters into sequence shards, and the column-parallel layers' inputs
// are all-gathered from them.
// Every member makes the same calls in the same order; the step program implements them with
// asynchronous collectives (scheduler/), so a model never sees a communicator.
#pragma once

#include <cstddef>

#include "device/typed_buffer.h"
#include "device/buffer.h"

namespace paxocl::models {

class TensorGroup {
 public:
  virtual ~TensorGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;

  // Each start_* issues its collective after the work already enqueued on this member's queue
  // and returns a ticket; work enqueued before finish(ticket) may run meanwhile, but must not
  // touch the collective's buffers. Work enqueued after finish(ticket) reads the result.
  //
  // Sum: x[0, n) <- the sum over the members of their x[0, n), in place.
  virtual int start_sum(device::TypedBuffer& x, std::size_t n) = 0;
  virtual int start_sum(device::Buffer<float>& x, std::size_t n) = 0;
  // Reduce-scatter: shard[0, n) <- elements [rank n, (rank + 1) n) of the sum over the members of
  // their full[0, size n). `full` is the collective's workspace: its contents are lost.
  virtual int start_reduce_scatter(device::TypedBuffer& full, device::TypedBuffer& shard, std::size_t n) = 0;
  // All-gather: full[0, size n) <- every member's shard[0, n), in rank order.
  virtual int start_all_gather(const device::TypedBuffer& shard, device::TypedBuffer& full, std::size_t n) = 0;
  virtual void finish(int ticket) = 0;

  void sum(device::TypedBuffer& x, std::size_t n) { finish(start_sum(x, n)); }
  void sum(device::Buffer<float>& x, std::size_t n) { finish(start_sum(x, n)); }
  void reduce_scatter(device::TypedBuffer& full, device::TypedBuffer& shard, std::size_t n) {
    finish(start_reduce_scatter(full, shard, n));
  }
  void all_gather(const device::TypedBuffer& shard, device::TypedBuffer& full, std::size_t n) {
    finish(start_all_gather(shard, full, n));
  }
};

}  // namespace paxocl::models
