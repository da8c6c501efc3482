// TensorGroupMember: one device's side of a tensor group (models::TensorGroup, the interface the
// layers call) over a collectives::TensorCommunicator. A collective is a marker on the device's
// queue, the contribution, and, at finish, the queue waiting (on the device) for the collective's
// user event. 16-bit activations travel as float32: the input cast into a scratch buffer first,
// the result cast back from one after (a sum in place; a reduce-scatter's or all-gather's output).
#pragma once

#include <map>
#include <vector>

#include "collectives/tensor_communicator.h"
#include "kernels_cl/device_runtime.h"
#include "models/layers/tensor_group.h"

namespace paxocl::scheduler {

class TensorGroupMember : public models::TensorGroup {
 public:
  // `member`: this device's index among the communicator's local members; `rank` its place on the
  // whole tensor axis (of `size`).
  TensorGroupMember(collectives::TensorCommunicator& comm, int member, int rank, int size,
                    kernels::DeviceRuntime& runtime);

  int size() const override { return size_; }
  int rank() const override { return rank_; }
  int start_sum(device::TypedBuffer& x, std::size_t n) override;
  int start_sum(device::Buffer<float>& x, std::size_t n) override;
  int start_reduce_scatter(device::TypedBuffer& full, device::TypedBuffer& shard, std::size_t n) override;
  int start_all_gather(const device::TypedBuffer& shard, device::TypedBuffer& full, std::size_t n) override;
  void finish(int ticket) override;

 private:
  struct Open {
    collectives::Pending pending;
    device::TypedBuffer* cast_back = nullptr;  // 16-bit: the buffer the result is cast back into ...
    device::Buffer<float> result;               // ... from this scratch, n_back floats
    std::size_t n_back = 0;
    std::vector<device::Buffer<float>> scratch;  // returned to the spares at finish
  };
  // The float32 form of `x`'s first n elements: x itself (float32) or a scratch it is cast into.
  device::Buffer<float> as_floats(const device::TypedBuffer& x, std::size_t n, Open& open);
  // The float32 buffer a collective writes `out`'s first n elements to: out itself or a scratch
  // cast back into it at finish.
  device::Buffer<float> output_floats(device::TypedBuffer& out, std::size_t n, Open& open);
  device::Buffer<float> take_scratch(std::size_t n, Open& open);
  int open(Open open, collectives::Pending pending);
  device::Event ready();  // a marker of the work enqueued so far, flushed to the device

  collectives::TensorCommunicator& comm_;
  int member_, rank_, size_;
  kernels::DeviceRuntime& runtime_;
  std::map<int, Open> open_;
  int next_ticket_ = 0;
  std::vector<device::Buffer<float>> spare_scratch_;  // reused by later 16-bit collectives
};

}  // namespace paxocl::scheduler
