// TensorGroup: the devices that together hold one model replica under tensor parallelism
// (models/tensor_split.h), as one member sees them. The layers call it where a partial result
// becomes whole: after the row-parallel projections (forward), after the column-parallel ones'
// input gradient (backward), around the vocabulary-parallel embedding, LM head and cross-entropy.
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

  // Starts x[0, n) <- the sum over the members of their x[0, n), in place, after the work already
  // enqueued on this member's queue. Work enqueued before finish_sum may run meanwhile, but must
  // not touch x.
  virtual int start_sum(device::TypedBuffer& x, std::size_t n) = 0;
  virtual int start_sum(device::Buffer<float>& x, std::size_t n) = 0;
  // Work enqueued after this reads the sum.
  virtual void finish_sum(int ticket) = 0;

  void sum(device::TypedBuffer& x, std::size_t n) { finish_sum(start_sum(x, n)); }
  void sum(device::Buffer<float>& x, std::size_t n) { finish_sum(start_sum(x, n)); }
};

}  // namespace paxocl::models
