// TensorGroupMember: one device's side of a tensor group (models::TensorGroup, the interface the
// layers call) over a collectives::TensorCommunicator. A sum is a marker on the device's queue,
// the contribution, and, at finish_sum, the queue waiting (on the device) for the collective's
// user event. 16-bit activations are summed in float32: cast into a scratch buffer first, cast
// back after.
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
  void finish_sum(int ticket) override;

 private:
  struct Open {
    collectives::Pending pending;
    device::TypedBuffer* cast_back = nullptr;  // 16-bit: the buffer the sum is cast back into
    device::Buffer<float> scratch;
    std::size_t n = 0;
  };
  int contribute(device::Buffer<float> buffer, std::size_t n, Open open);

  collectives::TensorCommunicator& comm_;
  int member_, rank_, size_;
  kernels::DeviceRuntime& runtime_;
  std::map<int, Open> open_;
  int next_ticket_ = 0;
  std::vector<device::Buffer<float>> spare_scratch_;  // reused by later 16-bit sums
};

}  // namespace paxocl::scheduler
